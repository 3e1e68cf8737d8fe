package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"testing"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/servicetest"
)

// Component tests: the whole service through run(), on a free port, against the embedded
// store and Redis, with requests signed the way the gateway signs them.

// TestComponent runs what every service behind the gateway must do through run(): boot,
// health, identity, errors, configuration.
func TestComponent(t *testing.T) {
	servicetest.Component(t, run, map[string]string{"REDIS_URL": testkit.Redis(t)})
}

// start runs the service on its own store and Redis.
func start(t *testing.T, env ...string) *servicetest.Process {
	t.Helper()
	vars := servicetest.Env(t)
	maps.Copy(vars, map[string]string{"REDIS_URL": testkit.Redis(t), "OUTBOX_RELAY_INTERVAL": "100ms"})
	for i := 0; i+1 < len(env); i += 2 {
		vars[env[i]] = env[i+1]
	}
	p := servicetest.Start(t, run, vars, "http")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service logs:\n%s", p.Logs())
		}
	})
	return p
}

// part is one part of a multipart upload.
type part struct {
	name, filename, contentType string
	body                        []byte
}

// multipartBody encodes parts in order.
func multipartBody(t testing.TB, parts ...part) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		disp := fmt.Sprintf(`form-data; name=%q`, p.name)
		if p.filename != "" {
			disp += fmt.Sprintf(`; filename=%q`, p.filename)
		}
		h.Set("Content-Disposition", disp)
		if p.contentType != "" {
			h.Set("Content-Type", p.contentType)
		}
		pw, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pw.Write(p.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.FormDataContentType(), buf.Bytes()
}

func upload(t testing.TB, c *servicetest.Client, caseID string, parts ...part) servicetest.Response {
	t.Helper()
	ct, body := multipartBody(t, parts...)
	return c.Send(http.MethodPost, "/v1/collection_cases/"+caseID+"/files", ct, bytes.NewReader(body))
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
