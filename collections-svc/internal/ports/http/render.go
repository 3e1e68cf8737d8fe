package http

import (
	"time"

	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"
	"rentalplatform/libs/ids"

	"rentalplatform/collections-svc/internal/domain"
)

// caseJSON is the collection_case object (spec §2.2). Collection cases carry is_test, not
// livemode.
type caseJSON struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Reference         string            `json:"reference"`
	Status            string            `json:"status"`
	CloseCode         *string           `json:"close_code"`
	AmountToRecover   int64             `json:"amount_to_recover"`
	Remainder         int64             `json:"remainder"`
	Currency          string            `json:"currency"`
	Debtor            debtorJSON        `json:"debtor"`
	CollectionPartner partnerJSON       `json:"collection_partner"`
	CreditorReference *string           `json:"creditor_reference"`
	DueDate           int64             `json:"due_date"`
	IsTest            bool              `json:"is_test"`
	Metadata          map[string]string `json:"metadata"`
	Created           int64             `json:"created"`
}

type debtorJSON struct {
	Type          string      `json:"type"`
	Name          string      `json:"name"`
	ContactPerson *string     `json:"contact_person"`
	Email         *string     `json:"email"`
	Phone         *string     `json:"phone"`
	Address       addressJSON `json:"address"`
	Country       string      `json:"country"`
}

type addressJSON struct {
	Line1      string `json:"line1"`
	City       string `json:"city"`
	PostalCode string `json:"postal_code"`
	Country    string `json:"country"`
}

type partnerJSON struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Phone string `json:"phone"`
	Site  string `json:"site"`
}

// fileJSON is the case_file object (the spec leaves the upload's answer open; issue 13 §2).
type fileJSON struct {
	ID             string  `json:"id"`
	Object         string  `json:"object"`
	CollectionCase string  `json:"collection_case"`
	DocumentType   string  `json:"document_type"`
	Description    *string `json:"description"`
	Filename       string  `json:"filename"`
	Size           int64   `json:"size"`
	ContentType    string  `json:"content_type"`
	SHA256         string  `json:"sha256"`
	Created        int64   `json:"created"`
	IsTest         bool    `json:"is_test"`
}

// paymentJSON is the debt_payment object.
type paymentJSON struct {
	ID             string  `json:"id"`
	Object         string  `json:"object"`
	CollectionCase string  `json:"collection_case"`
	Amount         int64   `json:"amount"`
	Currency       string  `json:"currency"`
	PaidAt         int64   `json:"paid_at"`
	Reference      *string `json:"reference"`
	Created        int64   `json:"created"`
	IsTest         bool    `json:"is_test"`
}

// CaseEvents renders the events cases raise: their objects as this port answers them (a
// debt payment's event shows the payment).
func CaseEvents(gen *ids.Generator, now func() time.Time) *events.Emitter[*domain.Case] {
	return &events.Emitter[*domain.Case]{IDs: gen, Now: now,
		Object: func(c *domain.Case) any { return renderCase(c) },
		Parts: map[string]func(*domain.Case, any) any{
			eventtype.DebtPaymentCreated: func(c *domain.Case, p any) any { return renderPayment(c, p.(domain.Payment)) },
		}}
}

// FileEvents renders case_file.created.
func FileEvents(gen *ids.Generator, now func() time.Time) *events.Emitter[*domain.File] {
	return &events.Emitter[*domain.File]{IDs: gen, Now: now, Object: func(f *domain.File) any { return renderFile(f) }}
}

func renderCase(c *domain.Case) caseJSON {
	d, a, p := c.Debtor(), c.Debtor().Address, c.Partner()
	return caseJSON{
		ID: c.ID(), Object: domain.ObjectCase, Reference: c.Reference(), Status: string(c.Status()),
		CloseCode: stringOrNil(string(c.CloseCode())), AmountToRecover: c.AmountToRecover(), Remainder: c.Remainder(),
		Currency: c.Currency(),
		Debtor: debtorJSON{Type: string(d.Type), Name: d.Name, ContactPerson: stringOrNil(d.ContactPerson),
			Email: stringOrNil(d.Email), Phone: stringOrNil(d.Phone),
			Address: addressJSON{Line1: a.Line1, City: a.City, PostalCode: a.PostalCode, Country: a.Country}, Country: d.Country},
		CollectionPartner: partnerJSON{Name: p.Name, Email: p.Email, Phone: p.Phone, Site: p.Site},
		CreditorReference: stringOrNil(c.CreditorReference()), DueDate: c.DueDate().Unix(), IsTest: !c.Livemode(),
		Metadata: c.Metadata(), Created: c.Created().Unix(),
	}
}

func renderFile(f *domain.File) fileJSON {
	return fileJSON{
		ID: f.ID(), Object: domain.ObjectFile, CollectionCase: f.Case(), DocumentType: string(f.DocumentType()),
		Description: stringOrNil(f.Description()), Filename: f.Filename(), Size: f.Size(), ContentType: f.ContentType(),
		SHA256: f.SHA256(), Created: f.Created().Unix(), IsTest: !f.Livemode(),
	}
}

func renderPayment(c *domain.Case, p domain.Payment) paymentJSON {
	return paymentJSON{
		ID: p.ID, Object: domain.ObjectPayment, CollectionCase: c.ID(), Amount: p.Amount, Currency: c.Currency(),
		PaidAt: p.PaidAt.Unix(), Reference: stringOrNil(p.Reference), Created: p.Created.Unix(), IsTest: !c.Livemode(),
	}
}

func stringOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
