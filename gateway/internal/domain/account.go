package domain

import "rentalplatform/libs/ids"

// maxAccountSuffix bounds the part after "acct_" so an account id always fits an index key and
// a log line.
const maxAccountSuffix = 64

// ValidateAccount checks that account is "acct_" followed by 1 to 64 ASCII letters or digits.
// An account exists once a key names it; there is no separate account record.
func ValidateAccount(account string) error {
	if !validAccount(account) {
		return invalid("account", "Invalid account: expected 'acct_' followed by 1 to %d letters or digits, got '%s'.",
			maxAccountSuffix, account)
	}
	return nil
}

func validAccount(account string) bool {
	if len(account) <= len(ids.Account) || len(account) > len(ids.Account)+maxAccountSuffix ||
		account[:len(ids.Account)] != ids.Account {
		return false
	}
	for _, c := range []byte(account[len(ids.Account):]) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
