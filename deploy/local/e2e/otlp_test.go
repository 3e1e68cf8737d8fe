package e2e

// An OTLP/HTTP trace receiver for the telemetry test: the programs of the stack export their
// spans to it (OTEL_EXPORTER_OTLP_ENDPOINT) as a collector would receive them, protobuf over
// HTTP, and it keeps them in memory.

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// span is one received span, flattened.
type span struct {
	TraceID, SpanID, Parent string // hex; Parent "" for a root
	Name                    string
	Kind                    tracepb.Span_SpanKind
	Service                 string            // the resource's service.name
	Resource                map[string]string // resource attributes
	Attrs                   map[string]string
	Links                   []spanRef
	Error                   bool // status code Error
}

type spanRef struct{ TraceID, SpanID string }

func (s span) String() string {
	return fmt.Sprintf("%s %s %q (%s) span %s parent %s links %v attrs %v", s.Service, s.Kind, s.Name, s.TraceID, s.SpanID, s.Parent, s.Links, s.Attrs)
}

// collector is the receiver.
type collector struct {
	URL string // OTEL_EXPORTER_OTLP_ENDPOINT: the exporter appends /v1/traces

	mu    sync.Mutex
	spans []span
	bad   []string // requests it could not decode
	// encodings counts the exports by Content-Encoding ("" for none).
	encodings map[string]int
}

func newCollector(t *testing.T) *collector {
	t.Helper()
	c := &collector{encodings: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(c.receive))
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

func (c *collector) receive(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			c.fail(w, "gzip: "+err.Error())
			return
		}
		body = gz
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		c.fail(w, "read: "+err.Error())
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		c.fail(w, fmt.Sprintf("%s %s, Content-Type %q", r.Method, r.URL.Path, r.Header.Get("Content-Type")))
		return
	}
	if err := proto.Unmarshal(raw, &req); err != nil {
		c.fail(w, "protobuf: "+err.Error())
		return
	}
	var got []span
	for _, rs := range req.GetResourceSpans() {
		res := attrMap(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := span{
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					Parent: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(), Kind: s.GetKind(),
					Service: res["service.name"], Resource: res, Attrs: attrMap(s.GetAttributes()),
					Error: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
				}
				for _, l := range s.GetLinks() {
					sp.Links = append(sp.Links, spanRef{hex.EncodeToString(l.GetTraceId()), hex.EncodeToString(l.GetSpanId())})
				}
				got = append(got, sp)
			}
		}
	}
	c.mu.Lock()
	c.spans = append(c.spans, got...)
	c.encodings[r.Header.Get("Content-Encoding")]++
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (c *collector) fail(w http.ResponseWriter, why string) {
	c.mu.Lock()
	c.bad = append(c.bad, why)
	c.mu.Unlock()
	http.Error(w, why, http.StatusBadRequest)
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = v.GetStringValue()
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = fmt.Sprint(v.GetIntValue())
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = fmt.Sprint(v.GetBoolValue())
		case *commonpb.AnyValue_DoubleValue:
			m[kv.GetKey()] = fmt.Sprint(v.GetDoubleValue())
		case *commonpb.AnyValue_ArrayValue: // strings, joined with commas
			var parts []string
			for _, e := range v.GetArrayValue().GetValues() {
				parts = append(parts, e.GetStringValue())
			}
			m[kv.GetKey()] = strings.Join(parts, ",")
		default:
			m[kv.GetKey()] = v.String()
		}
	}
	return m
}

// Spans returns what was received so far.
func (c *collector) Spans() []span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]span(nil), c.spans...)
}

// Encodings returns how many exports came with each Content-Encoding.
func (c *collector) Encodings() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.encodings)
}

// Trace returns the spans of one trace.
func (c *collector) Trace(traceID string) []span {
	var out []span
	for _, s := range c.Spans() {
		if s.TraceID == traceID {
			out = append(out, s)
		}
	}
	return out
}

// WaitFor polls until find, given everything received, reports true, and fails the test
// with the spans seen after timeout.
func (c *collector) WaitFor(t *testing.T, what string, timeout time.Duration, find func([]span) bool) []span {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		spans := c.Spans()
		if find(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			c.mu.Lock()
			bad := c.bad
			c.mu.Unlock()
			t.Fatalf("no %s among %d spans within %s (undecodable exports: %v):\n%s", what, len(spans), timeout, bad, dump(spans))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dump lists spans by trace, for a failure message.
func dump(spans []span) string {
	sorted := append([]span(nil), spans...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].TraceID < sorted[j].TraceID })
	var b strings.Builder
	for _, s := range sorted {
		b.WriteString("  " + s.String() + "\n")
	}
	return b.String()
}

// tree is one trace's spans by id, with the parent links to walk.
type tree map[string]span

func newTree(spans []span) tree {
	t := tree{}
	for _, s := range spans {
		t[s.SpanID] = s
	}
	return t
}

// find returns the spans matching every condition.
func find(spans []span, conds ...func(span) bool) []span {
	var out []span
next:
	for _, s := range spans {
		for _, c := range conds {
			if !c(s) {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

func ofService(name string) func(span) bool { return func(s span) bool { return s.Service == name } }
func ofKind(k tracepb.Span_SpanKind) func(span) bool {
	return func(s span) bool { return s.Kind == k }
}
func withAttr(k, v string) func(span) bool { return func(s span) bool { return s.Attrs[k] == v } }
func childOf(parent span) func(span) bool {
	return func(s span) bool { return s.TraceID == parent.TraceID && s.Parent == parent.SpanID }
}

// descends reports whether s is below ancestor in t (following parents within the trace).
func (t tree) descends(s, ancestor span) bool {
	for i := 0; i < 100 && s.Parent != ""; i++ {
		if s.Parent == ancestor.SpanID {
			return true
		}
		p, ok := t[s.Parent]
		if !ok {
			return false
		}
		s = p
	}
	return false
}

// rooted reports whether every ancestor of s, up to a root, is in t.
func (t tree) rooted(s span) bool {
	for i := 0; i < 100; i++ {
		if s.Parent == "" {
			return true
		}
		p, ok := t[s.Parent]
		if !ok || p.TraceID != s.TraceID {
			return false
		}
		s = p
	}
	return false
}

// traceparent splits a W3C traceparent header into trace and span ids.
func traceparent(t *testing.T, h string) (traceID, spanID string) {
	t.Helper()
	parts := strings.Split(h, "-")
	if len(parts) != 4 || len(parts[1]) != 32 || len(parts[2]) != 16 {
		t.Fatalf("traceparent %q", h)
	}
	return parts[1], parts[2]
}
