package domain

import (
	"path"
	"slices"
	"strings"
	"time"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"
	"rentalplatform/libs/validate"
)

// Limits of an upload.
const (
	// MaxFileSize is the largest file a case takes.
	MaxFileSize = 25 << 20
	// MaxDescriptionLen bounds a file's description.
	MaxDescriptionLen = 500
	// MaxFilenameLen bounds the file name kept (longer ones are cut, keeping the extension).
	MaxFilenameLen = 255
)

// DocumentType says what a file is to the case.
type DocumentType string

// Document types.
const (
	DocOriginalInvoice   DocumentType = "original_invoice"
	DocDebtorDocuments   DocumentType = "debtor_documents"
	DocCreditorDocuments DocumentType = "creditor_documents"
	DocDemandLetter      DocumentType = "demand_letter"
	DocMiscellaneous     DocumentType = "miscellaneous"
)

// DocumentTypes lists every document type.
var DocumentTypes = []DocumentType{DocOriginalInvoice, DocDebtorDocuments, DocCreditorDocuments, DocDemandLetter, DocMiscellaneous}

// File is the record of a file attached to a case; its bytes are stored apart, under its id.
type File struct {
	id           string
	account      string
	livemode     bool
	caseID       string
	documentType DocumentType
	description  string
	filename     string
	size         int64
	contentType  string
	sha256       string
	created      time.Time

	// Recorder keeps case_file.created until the store renders it.
	events.Recorder
}

// NewFileParams is everything needed to record an uploaded file. Content fields (size, type,
// digest) are what the upload measured; the rest is the client's.
type NewFileParams struct {
	ID       string
	Account  string
	Livemode bool
	Case     string
	Created  time.Time

	Filename    string
	Size        int64
	ContentType string
	SHA256      string

	DocumentType *string
	Description  *string
}

// NewFile validates the client's fields and returns the file's record.
func NewFile(p NewFileParams) (*File, error) {
	if p.DocumentType == nil {
		return nil, domainerr.Missing("document_type")
	}
	if !slices.Contains(DocumentTypes, DocumentType(*p.DocumentType)) {
		return nil, invalid("document_type", "Invalid document_type: must be one of original_invoice, debtor_documents, creditor_documents, demand_letter, miscellaneous; got '%s'.", validate.Shown(*p.DocumentType))
	}
	f := &File{
		id: p.ID, account: p.Account, livemode: p.Livemode, caseID: p.Case,
		documentType: DocumentType(*p.DocumentType), filename: CleanFilename(p.Filename),
		size: p.Size, contentType: p.ContentType, sha256: p.SHA256, created: p.Created.UTC().Truncate(time.Second),
	}
	if p.Description != nil {
		// Browsers send a form's line breaks as CRLF (HTML's form encoding): stored as LF.
		d := validate.TrimSpace(crlf.Replace(*p.Description), true)
		if d == "" {
			return nil, invalid("description", "Invalid description: must not be empty or blank.")
		}
		if err := validate.Text("description", d, MaxDescriptionLen, true); err != nil {
			return nil, err
		}
		f.description = d
	}
	f.Raise(eventtype.CaseFileCreated)
	return f, nil
}

// CleanFilename keeps what can be shown of a client's file name: its last path element
// (browsers on Windows send "C:\…\x.pdf"), without control characters, and at most
// MaxFilenameLen characters with the extension kept. Nothing is left: "file".
func CleanFilename(name string) string {
	name = strings.ToValidUTF8(name, "")
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.TrimSpace(strings.Map(func(r rune) rune {
		if validate.IsControl(r) {
			return -1
		}
		return r
	}, name))
	if name == "" || name == "." || name == ".." {
		return "file"
	}
	if r := []rune(name); len(r) > MaxFilenameLen {
		ext := []rune(path.Ext(name))
		if len(ext) > 16 {
			ext = nil
		}
		name = string(r[:MaxFilenameLen-len(ext)]) + string(ext)
	}
	return name
}

// Accessors.
func (f *File) ID() string                 { return f.id }
func (f *File) Account() string            { return f.account }
func (f *File) Livemode() bool             { return f.livemode }
func (f *File) Case() string               { return f.caseID }
func (f *File) DocumentType() DocumentType { return f.documentType }

// crlf turns CRLF and lone CR line breaks into LF.
var crlf = strings.NewReplacer("\r\n", "\n", "\r", "\n")

func (f *File) Description() string { return f.description }
func (f *File) Filename() string    { return f.filename }
func (f *File) Size() int64         { return f.size }
func (f *File) ContentType() string { return f.contentType }
func (f *File) SHA256() string      { return f.sha256 }
func (f *File) Created() time.Time  { return f.created }

// Owned reports whether the file belongs to the account in the mode and to the case.
func (f *File) Owned(caseID, account string, livemode bool) bool {
	return f.caseID == caseID && f.account == account && f.livemode == livemode
}

// FileState is every field of a file record, for the repository.
type FileState struct {
	ID, Account  string
	Livemode     bool
	Case         string
	DocumentType DocumentType
	Description  string
	Filename     string
	Size         int64
	ContentType  string
	SHA256       string
	Created      time.Time
}

// State returns the record's fields.
func (f *File) State() FileState {
	return FileState{ID: f.id, Account: f.account, Livemode: f.livemode, Case: f.caseID, DocumentType: f.documentType,
		Description: f.description, Filename: f.filename, Size: f.size, ContentType: f.contentType, SHA256: f.sha256, Created: f.created}
}

// RehydrateFile rebuilds a stored record; it checks nothing.
func RehydrateFile(s FileState) *File {
	return &File{id: s.ID, account: s.Account, livemode: s.Livemode, caseID: s.Case, documentType: s.DocumentType,
		description: s.Description, filename: s.Filename, size: s.Size, contentType: s.ContentType, sha256: s.SHA256, created: s.Created.UTC()}
}

// FileTooLarge refuses a file over MaxFileSize.
func FileTooLarge() error {
	return domainerr.New(domainerr.TooLarge, CodeFileTooLarge, "file", "The file is larger than %d MiB, the most a collection case takes.", MaxFileSize>>20)
}
