package http

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Document is a fixed file a listener serves: the API's OpenAPI document, its reference page.
type Document struct {
	Path        string // e.g. /v1/openapi.json
	ContentType string
	Body        []byte
}

// documentCache is how long a client may use its copy without asking again. Short, because
// a deploy changes the document; the ETag makes asking again cheap.
const documentCache = "public, max-age=300"

// serveDocuments registers each document on r (GET, and HEAD with it). The ETag is the
// body's SHA-256, made once; a request whose If-None-Match names it gets 304 without a body.
func serveDocuments(r fiber.Router, docs []Document) {
	for _, d := range docs {
		sum := sha256.Sum256(d.Body)
		etag := `"` + hex.EncodeToString(sum[:]) + `"`
		r.Get(d.Path, func(c *fiber.Ctx) error {
			c.Set(fiber.HeaderETag, etag)
			c.Set(fiber.HeaderCacheControl, documentCache)
			if matchesETag(c.Get(fiber.HeaderIfNoneMatch), etag) {
				return c.SendStatus(fiber.StatusNotModified)
			}
			c.Set(fiber.HeaderContentType, d.ContentType)
			return c.Send(d.Body)
		})
	}
}

// matchesETag reports whether an If-None-Match value names etag (RFC 9110 §13.1.2: a list of
// entity tags, weak ones compared weakly, or "*").
func matchesETag(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}
