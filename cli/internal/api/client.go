// Package api sends the CLI's requests to the gateway.
package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client calls the API with one key.
type Client struct {
	Base  string // the gateway's URL, e.g. http://127.0.0.1:8080
	Key   string
	HTTP  *http.Client
	Agent string // User-Agent
}

// Response is an answer: its status, headers and body.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// APIError is an answer with the error envelope ({"error": {...}}).
type APIError struct {
	Status    int
	Type      string `json:"type"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	Param     string `json:"param"`
	RequestID string `json:"request_id"`
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("%d %s", e.Status, e.Type)
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Param != "" {
		s += " [param " + e.Param + "]"
	}
	if e.RequestID != "" {
		s += " [request " + e.RequestID + "]"
	}
	return s
}

// NewIdempotencyKey returns a random key: every POST the CLI sends carries one, so a retry of
// the same command line (with --idempotency-key) cannot create a second object.
func NewIdempotencyKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return "cli_" + hex.EncodeToString(b)
}

// Do sends method to path (which starts with /, with any query) with body as JSON (nil: none)
// and idempotencyKey (for a POST). An answer with the error envelope is returned as *APIError
// with the response.
func (c *Client) Do(ctx context.Context, method, path string, body []byte, idempotencyKey string) (*Response, error) {
	contentType := ""
	if body != nil {
		contentType = "application/json"
	}
	return c.Send(ctx, method, path, contentType, body, idempotencyKey)
}

// Send is Do with a body of any contentType, such as a multipart/form-data upload's.
func (c *Client) Send(ctx context.Context, method, path, contentType string, body []byte, idempotencyKey string) (*Response, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("path %q: want one starting with /, such as /v1/events", path)
	}
	base, err := url.Parse(c.Base)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("API base %q: want an http or https URL, such as http://127.0.0.1:8080", c.Base)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Base, "/")+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	req.Header.Set("User-Agent", c.Agent)
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", idempotencyKey)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: time.Minute}
	}
	res, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	r := &Response{Status: res.StatusCode, Header: res.Header, Body: b}
	if res.StatusCode >= 400 {
		return r, ErrorOf(res.StatusCode, b)
	}
	return r, nil
}

// ErrorOf returns the error an answer of status with body b stands for: the error envelope's,
// or the status and the body as its message when b holds none.
func ErrorOf(status int, b []byte) *APIError {
	var env struct {
		Error *APIError `json:"error"`
	}
	if json.Unmarshal(b, &env) == nil && env.Error != nil {
		env.Error.Status = status
		return env.Error
	}
	return &APIError{Status: status, Type: http.StatusText(status), Message: strings.TrimSpace(string(b))}
}
