package domain

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/validate"
)

// Product is one check a session runs.
type Product string

// The products of spec §2.1.
const (
	ProductIdentity  Product = "identity"
	ProductIncome    Product = "income"
	ProductCredit    Product = "credit"
	ProductCashFlow  Product = "cash_flow"
	ProductDocuments Product = "documents"
)

// AllProducts lists the products in the spec's order.
var AllProducts = []Product{ProductIdentity, ProductIncome, ProductCredit, ProductCashFlow, ProductDocuments}

func productNames() string {
	names := make([]string, len(AllProducts))
	for i, p := range AllProducts {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// parseProducts checks the products param: sent, non-empty, each known, none twice.
func parseProducts(in []string) ([]Product, error) {
	if in == nil {
		return nil, domainerr.Missing("products")
	}
	if len(in) == 0 {
		return nil, invalid("products", "Invalid products: name at least one of %s.", productNames())
	}
	out := make([]Product, 0, len(in))
	for i, s := range in {
		param := fmt.Sprintf("products[%d]", i)
		p := Product(s)
		if !slices.Contains(AllProducts, p) {
			return nil, invalid(param, "Invalid %s: '%s' is not a product; use one of %s.", param, validate.Shown(s), productNames())
		}
		if slices.Contains(out, p) {
			return nil, invalid(param, "Invalid %s: '%s' is listed twice; each product is run once.", param, s)
		}
		out = append(out, p)
	}
	return out, nil
}

// ErrorCode says why a session failed or expired (last_error.code).
type ErrorCode string

// Failure codes. Each product check has its own; abandoned is expiry's, consent_declined the
// applicant's refusal to let the checks run.
const (
	ErrorDocumentUnverified   ErrorCode = "document_unverified"
	ErrorIdentityMismatch     ErrorCode = "identity_mismatch"
	ErrorIncomeInsufficient   ErrorCode = "income_insufficient"
	ErrorCreditCheckFailed    ErrorCode = "credit_check_failed"
	ErrorCashFlowInsufficient ErrorCode = "cash_flow_insufficient"
	ErrorConsentDeclined      ErrorCode = "consent_declined"
	ErrorAbandoned            ErrorCode = "abandoned"
)

// failureReasons is the text of each code, written for the customer. It holds nothing of the
// applicant, so it survives redaction.
var failureReasons = map[ErrorCode]string{
	ErrorDocumentUnverified:   "The applicant's document could not be verified.",
	ErrorIdentityMismatch:     "The applicant's details do not match the identity records checked.",
	ErrorIncomeInsufficient:   "The verified income does not meet the requirement.",
	ErrorCreditCheckFailed:    "The credit check did not pass.",
	ErrorCashFlowInsufficient: "The verified cash flow does not meet the requirement.",
	ErrorConsentDeclined:      "The applicant declined consent to the checks.",
}

// productFailure is the code a failed check of each product reports by default.
var productFailure = map[Product]ErrorCode{
	ProductIdentity:  ErrorIdentityMismatch,
	ProductIncome:    ErrorIncomeInsufficient,
	ProductCredit:    ErrorCreditCheckFailed,
	ProductCashFlow:  ErrorCashFlowInsufficient,
	ProductDocuments: ErrorDocumentUnverified,
}

// FailureCodes are the codes a failure may be given (abandoned is expiry's own).
func FailureCodes() []ErrorCode {
	return []ErrorCode{ErrorDocumentUnverified, ErrorIdentityMismatch, ErrorIncomeInsufficient,
		ErrorCreditCheckFailed, ErrorCashFlowInsufficient, ErrorConsentDeclined}
}

// LastError says why a session failed or expired. Product is "" when the reason is not one
// product's check (consent declined, abandoned).
type LastError struct {
	Code    ErrorCode
	Reason  string
	Product Product
}

// ResultStatus is one product's result in a report.
type ResultStatus string

// Product results.
const (
	ResultPassed ResultStatus = "passed"
	ResultFailed ResultStatus = "failed"
)

// ProductResult is one product's result: passed, or failed with the reasons.
type ProductResult struct {
	Product Product
	Status  ResultStatus
	Reasons []string
}

// Report is a completed session's results, one per product of the session in its order.
type Report struct {
	ID       string
	Created  time.Time
	Products []ProductResult
}

// ReportIDPrefix starts every report id.
const ReportIDPrefix = "vr_"

// SessionIDPrefix starts every session id.
const SessionIDPrefix = "vs_"

// ReportID is the id of a session's report: the session's id under the report's prefix. A
// session has at most one report, which lives in the session's document (it is written by the
// same write that completes the session), so the report is read by its session's _id.
func ReportID(session string) string {
	return ReportIDPrefix + strings.TrimPrefix(session, SessionIDPrefix)
}

// SessionOfReport is the id of the session a report id belongs to.
func SessionOfReport(report string) string {
	return SessionIDPrefix + strings.TrimPrefix(report, ReportIDPrefix)
}

func (r *Report) clone() *Report {
	if r == nil {
		return nil
	}
	out := &Report{ID: r.ID, Created: r.Created, Products: make([]ProductResult, len(r.Products))}
	for i, p := range r.Products {
		out.Products[i] = ProductResult{Product: p.Product, Status: p.Status, Reasons: slices.Clone(p.Reasons)}
	}
	return out
}
