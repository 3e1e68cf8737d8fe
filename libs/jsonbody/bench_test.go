package jsonbody

import (
	"fmt"
	"strings"
	"testing"
)

// benchBodies are bodies of the sizes the API sees: a typical create, one with full metadata,
// and a batch of nested objects.
func benchBodies() map[string][]byte {
	var meta strings.Builder
	for i := 0; i < 50; i++ {
		if i > 0 {
			meta.WriteByte(',')
		}
		fmt.Fprintf(&meta, `"key_%02d":"value number %d with some text, ünïcode"`, i, i)
	}
	var reqs strings.Builder
	for i := 0; i < 100; i++ {
		if i > 0 {
			reqs.WriteByte(',')
		}
		fmt.Fprintf(&reqs, `{"amount":%d}`, 1000+i)
	}
	return map[string][]byte{
		"small":    []byte(`{"url":"https://example.com/hooks","enabled_events":["payment_request.succeeded","payment_request.failed"],"metadata":{"team":"billing"}}`),
		"metadata": []byte(`{"url":"https://example.com/hooks","metadata":{` + meta.String() + `}}`),
		"nested":   []byte(`{"applicant":{"email":"a@example.com","address":{"line1":"Street 1","country":"NO"}},"requests":[` + reqs.String() + `]}`),
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, name := range []string{"small", "metadata", "nested"} {
		in := benchBodies()[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				var v body
				if err := Decode(in, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
