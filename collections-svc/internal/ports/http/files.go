package http

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/libs/apierr"
	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/fiberx"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/request"

	"rentalplatform/collections-svc/internal/app"
	"rentalplatform/collections-svc/internal/domain"
)

const (
	// maxFormOverhead is what an upload may hold besides the file's bytes: part headers, the
	// boundaries and the two text fields. A body longer than the file limit and this is 413
	// whatever it holds.
	maxFormOverhead = 1 << 20
	// maxFieldBytes bounds a text field's bytes: the longest description in 4-byte characters.
	maxFieldBytes = 4 * domain.MaxDescriptionLen
	// drainLimit is how much of a refused upload is read and dropped before the answer, so the
	// gateway, still sending, reads the answer instead of a reset connection. More than that
	// and the connection is closed instead.
	drainLimit = domain.MaxFileSize + 2*maxFormOverhead
	// downloadTimeout bounds sending one file's content (the handler returns before it is
	// sent, so the request's context cannot).
	downloadTimeout = 2 * time.Minute
)

// CodeMultipartInvalid: an upload body that is not a readable multipart/form-data body.
const CodeMultipartInvalid = "multipart_invalid"

// errBodyTooLarge is met reading past maxBodyLen of an upload.
var errBodyTooLarge = errors.New("upload body too large")

// The file parts' names.
const (
	partFile         = "file"
	partDocumentType = "document_type"
	partDescription  = "description"
)

// uploadFile streams a multipart upload into the case's files: the body is read as it
// arrives (the runtime streams this route, IsUpload), the file part goes to the content store
// piece by piece, and the fields may come before or after it.
func (h handlers) uploadFile(c *fiber.Ctx) error {
	id := param(c, "id")
	body := uploadBody(c)
	defer finishBody(c, body)
	if err := request.RefuseQuery(c); err != nil {
		return err
	}
	mt, mtParams, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	if err != nil || mt != fiber.MIMEMultipartForm || mtParams["boundary"] == "" {
		return apierr.New(fiber.StatusUnsupportedMediaType, apierr.InvalidRequest, apierr.CodeUnsupportedMedia,
			"File uploads must be sent as 'multipart/form-data' with a boundary.")
	}
	if cl := c.Request().Header.ContentLength(); cl > domain.MaxFileSize+maxFormOverhead {
		return domain.FileTooLarge()
	}
	ctx := c.UserContext()
	up, err := h.svc.BeginUpload(ctx, caller(c), id)
	if err != nil {
		return err
	}
	// A refusal is answered at once; what was stored of the file is dropped after.
	defer up.AbortLater(ctx)
	fields, err := readForm(ctx, multipart.NewReader(&limitedBody{r: body, left: domain.MaxFileSize + maxFormOverhead}, mtParams["boundary"]), up)
	if err != nil {
		return err
	}
	f, err := up.Commit(ctx, fields)
	if err != nil {
		return err
	}
	return fiberx.Object(c, f, renderFile)
}

// uploader is what readForm drives: the app's Upload.
type uploader interface {
	File(ctx context.Context, filename string, r io.Reader) error
	HasFile() bool
}

// readForm reads every part of the form: the file into up, the fields into the result. A part
// given twice, a part the operation does not take, a missing file and a body that is not
// multipart are refused, naming the part.
func readForm(ctx context.Context, mr *multipart.Reader, up uploader) (app.FileFields, error) {
	var fields app.FileFields
	seen := map[string]bool{}
	for {
		part, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fields, readError(err)
		}
		name := part.FormName()
		if seen[name] {
			return fields, domainerr.New(domainerr.Invalid, domainerr.CodeParameterDuplicate, name, "Received the parameter %s more than once.", name)
		}
		seen[name] = true
		switch name {
		case partFile:
			if part.FileName() == "" {
				return fields, domainerr.InvalidParam(partFile, "Invalid file: send it as a file part (Content-Disposition with a filename), not as a text field.")
			}
			if err := up.File(ctx, part.FileName(), part); err != nil {
				if re := (*app.ReadError)(nil); errors.As(err, &re) {
					return fields, readError(re.Err)
				}
				return fields, err
			}
		case partDocumentType, partDescription:
			v, err := readField(part, name)
			if err != nil {
				return fields, err
			}
			if name == partDocumentType {
				fields.DocumentType = &v
			} else {
				fields.Description = &v
			}
		case "":
			return fields, domainerr.New(domainerr.Invalid, CodeMultipartInvalid, "", "Every part of the upload must have a name (Content-Disposition: form-data; name=\"…\").")
		default:
			return fields, domainerr.Unknown(name)
		}
	}
	if !up.HasFile() {
		return fields, domainerr.Missing(partFile)
	}
	return fields, nil
}

// readField reads a text part, at most maxFieldBytes of UTF-8.
func readField(part *multipart.Part, name string) (string, error) {
	b, err := io.ReadAll(io.LimitReader(part, maxFieldBytes+1))
	if err != nil {
		return "", readError(err)
	}
	if len(b) > maxFieldBytes || !utf8.Valid(b) {
		return "", domainerr.InvalidParam(name, "Invalid %s: must be UTF-8 text of at most %d bytes.", name, maxFieldBytes)
	}
	return string(b), nil
}

// readError answers a failure to read the upload itself.
func readError(err error) error {
	if errors.Is(err, errBodyTooLarge) {
		return domain.FileTooLarge()
	}
	return domainerr.New(domainerr.Invalid, CodeMultipartInvalid, "",
		"The upload could not be read as multipart/form-data: %s.", err.Error())
}

// uploadBody returns the request body as it arrives (or, for a body the server already read,
// that body).
func uploadBody(c *fiber.Ctx) io.Reader {
	if r := c.Context().RequestBodyStream(); r != nil && c.Request().IsBodyStream() {
		return r
	}
	return bytes.NewReader(c.Body())
}

// finishBody reads what is left of a streamed upload (a refused one) up to drainLimit and drops
// it, so the client sees the answer; past that the connection is closed by the server. The
// rest is then taken off the request, so nothing after the handler reads it into memory.
func finishBody(c *fiber.Ctx, body io.Reader) {
	req := c.Request()
	if !req.IsBodyStream() {
		return
	}
	_, _ = io.CopyN(io.Discard, body, drainLimit)
	req.ResetBody()
}

// limitedBody reads r and fails with errBodyTooLarge past left bytes.
type limitedBody struct {
	r    io.Reader
	left int64
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		if n, _ := l.r.Read(one[:]); n > 0 {
			return 0, errBodyTooLarge
		}
		return l.r.Read(p)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

func (h handlers) listFiles(c *fiber.Ctx) error {
	id := param(c, "id")
	q, err := request.Query(c)
	if err != nil {
		return err
	}
	p, err := listing.Parse(q, listing.Spec{IDPrefix: ids.File, Created: true})
	if err != nil {
		return err
	}
	page, hasMore, err := h.svc.ListFiles(c.UserContext(), caller(c), id, p)
	if err != nil {
		return err
	}
	data := make([]fileJSON, len(page))
	for i, f := range page {
		data[i] = renderFile(f)
	}
	return c.JSON(listing.New(casesPath+"/"+id+"/files", caller(c).Livemode, data, hasMore))
}

// fileContent answers the file's bytes as stored, with its sniffed type and length. The body
// is streamed from the store after the handler returns, under its own deadline.
func (h handlers) fileContent(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.UserContext()), downloadTimeout)
	f, r, err := h.svc.FileContent(ctx, caller(c), param(c, "id"), param(c, "file_id"))
	if err != nil {
		cancel()
		return err
	}
	ct := f.ContentType()
	if domain.IsText(ct) {
		ct += "; charset=utf-8"
	}
	c.Set(fiber.HeaderContentType, ct)
	c.Set(fiber.HeaderContentDisposition, mime.FormatMediaType("attachment", map[string]string{"filename": f.Filename()}))
	// The type was sniffed and is final: a browser must not guess another (stored HTML
	// shown as a page).
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Context().SetBodyStream(&closeAll{r, cancel}, int(f.Size()))
	return nil
}

// closeAll closes the content reader and ends its context once the server has sent it.
type closeAll struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *closeAll) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
