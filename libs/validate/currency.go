package validate

import "strings"

// currencyCodes lists, lower-case, sorted and separated by single spaces, the ISO 4217
// alphabetic codes of the currencies in use: ISO 4217 List One as of 2026, after XCG replaced
// ANG (2025), ZWG replaced ZWL (2024), SLE replaced SLL (2023), the euro replaced HRK (2023)
// and BGN (2026), and CUC left circulation (2021). It leaves out the List One codes that are
// not money a price can be stated in: the funds codes (BOV, CHE, CHW, CLF, COU, MXV, USN,
// UYI, UYW), precious metals (XAG, XAU, XPD, XPT), bond-market units (XBA-XBD), XDR, XSU,
// XUA, the testing code XTS and XXX ("no currency").
//
// Every code has three letters and the input looked up has three letters too, so a match can
// never span a separator: a substring search is an exact lookup.
const currencyCodes = "aed afn all amd aoa ars aud awg azn" +
	" bam bbd bdt bhd bif bmd bnd bob brl bsd btn bwp byn bzd" +
	" cad cdf chf clp cny cop crc cup cve czk" +
	" djf dkk dop dzd" +
	" egp ern etb eur" +
	" fjd fkp" +
	" gbp gel ghs gip gmd gnf gtq gyd" +
	" hkd hnl htg huf" +
	" idr ils inr iqd irr isk" +
	" jmd jod jpy" +
	" kes kgs khr kmf kpw krw kwd kyd kzt" +
	" lak lbp lkr lrd lsl lyd" +
	" mad mdl mga mkd mmk mnt mop mru mur mvr mwk mxn myr mzn" +
	" nad ngn nio nok npr nzd" +
	" omr" +
	" pab pen pgk php pkr pln pyg" +
	" qar" +
	" ron rsd rub rwf" +
	" sar sbd scr sdg sek sgd shp sle sos srd ssp stn svc syp szl" +
	" thb tjs tmt tnd top try ttd twd tzs" +
	" uah ugx usd uyu uzs" +
	" ved ves vnd vuv" +
	" wst" +
	" xaf xcd xcg xof xpf" +
	" yer" +
	" zar zmw zwg"

// Currency checks that s is an ISO 4217 currency code in use, in any case, and returns it
// lower-case, the form the API stores and returns.
func Currency(param, s string) (string, error) {
	if s == "" {
		return "", empty(param)
	}
	c, ok := asciiLetters(s, 3, false)
	if !ok || !strings.Contains(currencyCodes, c) {
		return "", invalid(param, "Invalid %s: '%s' is not an ISO 4217 currency code (e.g. 'eur', 'usd').", param, shown(s))
	}
	return c, nil
}

// asciiLetters returns s in one case when it is exactly n ASCII letters. Case is folded by
// hand, not with strings.ToLower/ToUpper, which map some non-ASCII letters to ASCII ones
// (the Kelvin sign 'K' lower-cases to 'k') and would let them pass as codes.
func asciiLetters(s string, n int, upper bool) (string, bool) {
	if len(s) != n {
		return "", false
	}
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z':
			if upper {
				b[i] = c - 'a' + 'A'
			}
		case 'A' <= c && c <= 'Z':
			if !upper {
				b[i] = c - 'A' + 'a'
			}
		default:
			return "", false
		}
	}
	return string(b), true
}
