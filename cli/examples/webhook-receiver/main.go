// Command webhook-receiver is the smallest server that checks webhooks as an integration
// should: the Standard Webhooks signature (webhook-id, webhook-timestamp, webhook-signature)
// with the endpoint's whsec_ secret, computed with the standard library alone, a timestamp
// within five minutes, then the event. Run it behind `rental listen --forward-to`:
//
//	WEBHOOK_SECRET=$(./bin/rental listen --print-secret) go run ./cli/examples/webhook-receiver
//	./bin/rental listen --forward-to http://127.0.0.1:4242/webhooks
//
// It answers 200 to a verified event and 400 to anything else, and prints a line for each.
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// tolerance bounds how old (or how far ahead) a signed timestamp may be: a replay of a
// captured request is refused after it.
const tolerance = 5 * time.Minute

func main() {
	addr := flag.String("addr", "127.0.0.1:4242", "the address to listen on")
	flag.Parse()
	secret := os.Getenv("WEBHOOK_SECRET")
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if !strings.HasPrefix(secret, "whsec_") || err != nil || len(key) == 0 {
		log.Fatal("set WEBHOOK_SECRET to the endpoint's whsec_… secret (rental listen --print-secret)")
	}
	http.HandleFunc("POST /webhooks", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err == nil {
			err = verify(key, r.Header, body, time.Now())
		}
		if err != nil {
			fmt.Printf("refused %s: %v\n", r.Header.Get("webhook-id"), err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var ev struct{ ID, Type string }
		json.Unmarshal(body, &ev)
		fmt.Printf("verified %s %s\n", ev.Type, ev.ID)
	})
	fmt.Printf("Receiving webhooks at http://%s/webhooks\n", *addr)
	log.Fatal(http.ListenAndServe(*addr, nil))
}

// verify checks a request's Standard Webhooks signature: one of the space-separated "v1,<sig>"
// values must be the base64 HMAC-SHA256 of "id.timestamp.body" under key.
func verify(key []byte, h http.Header, body []byte, now time.Time) error {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("webhook-timestamp is not a number")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("webhook-timestamp is %s away from now", d.Round(time.Second))
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range strings.Fields(sigs) {
		v, sig, ok := strings.Cut(s, ",")
		if got, err := base64.StdEncoding.DecodeString(sig); ok && v == "v1" && err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return errors.New("no signature matches the secret")
}
