// Package request reads what a client sent to a Fiber handler: a JSON body by the rules of
// package jsonbody, and the query string, refusing what two readers could take differently
// and parameters an operation does not take. Every refusal is the error envelope naming the
// parameter.
package request

import (
	"fmt"
	"mime"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/libs/apierr"
	"rentalplatform/libs/jsonbody"
	"rentalplatform/libs/listing"
)

// DecodeJSON decodes the request body into dst (see package jsonbody). A body that is not
// JSON by its Content-Type is refused with 415.
func DecodeJSON(c *fiber.Ctx, dst any) error {
	body := c.Body()
	if len(body) > 0 {
		mt, _, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
		if err != nil || mt != fiber.MIMEApplicationJSON {
			return apierr.New(415, apierr.InvalidRequest, apierr.CodeUnsupportedMedia,
				"Request bodies must be JSON, sent with 'Content-Type: application/json'.")
		}
	}
	return jsonbody.Decode(body, dst)
}

// Query returns the request's query parameters, copied out of Fiber's reused buffers (see
// ParseQuery for what it refuses).
func Query(c *fiber.Ctx) (url.Values, error) {
	return ParseQuery(string(c.Request().URI().QueryString()))
}

// NoQuery wraps the handler of an operation that takes no query parameters with RefuseQuery.
func NoQuery(h fiber.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := RefuseQuery(c); err != nil {
			return err
		}
		return h(c)
	}
}

// RefuseQuery refuses a request to an operation that takes no query parameters but sent some:
// 400 parameter_unknown naming the first (in name order), as a body parameter the operation
// does not take is, so a misplaced parameter never goes unnoticed. It is nil for a request
// with none.
func RefuseQuery(c *fiber.Ctx) error {
	if len(c.Request().URI().QueryString()) == 0 {
		return nil
	}
	q, err := Query(c)
	if err != nil || len(q) == 0 {
		return err
	}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	return apierr.Unknown(slices.Min(names))
}

// ParseQuery reads a query string and refuses, naming the parameter, what two readers of it
// could take differently: a parameter given more than once (400 parameter_duplicate), unless
// its name ends in "[]" (an array: types[]=a&types[]=b), and a name or value that is not valid
// UTF-8 once percent-decoded (400 parameter_invalid; url.Values would hand the bytes on, and
// whatever stores or prints them turns them into U+FFFD). Errors name the first offender in
// name order.
func ParseQuery(raw string) (url.Values, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, apierr.Invalid(apierr.CodeParameterInvalid, "", "The query string is not valid URL encoding.")
	}
	if len(q) == 0 {
		return q, nil
	}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !utf8.ValidString(name) {
			param := strings.ToValidUTF8(name, "\uFFFD")
			return nil, apierr.Invalid(apierr.CodeParameterInvalid, param,
				fmt.Sprintf("Invalid parameter name %s: it is not valid UTF-8 text.", param))
		}
		vs := q[name]
		for _, v := range vs {
			if !utf8.ValidString(v) {
				return nil, apierr.Invalid(apierr.CodeParameterInvalid, name,
					fmt.Sprintf("Invalid %s: the value is not valid UTF-8 text.", name))
			}
		}
		if len(vs) > 1 && !listing.IsArray(name) {
			return nil, listing.Duplicate(name)
		}
	}
	return q, nil
}
