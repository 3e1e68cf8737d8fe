package telemetry

import (
	"fmt"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// NewSampler returns the sampler OTEL_TRACES_SAMPLER names, with OTEL_TRACES_SAMPLER_ARG (a
// ratio from 0 to 1, default 1) for the ratio samplers; "" is parentbased_always_on. The
// parent-based ones follow the caller's decision when a request arrives with one (a sampled
// traceparent from an upstream proxy), so one trace is never half recorded.
func NewSampler(name, arg string) (sdktrace.Sampler, error) {
	ratio := 1.0
	if arg != "" && strings.HasSuffix(name, "traceidratio") {
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return nil, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG: %q is not a ratio from 0 to 1", arg)
		}
		ratio = r
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(ratio), nil
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio)), nil
	}
	return nil, fmt.Errorf("OTEL_TRACES_SAMPLER: %q is not one of always_on, always_off, traceidratio, "+
		"parentbased_always_on, parentbased_always_off, parentbased_traceidratio", name)
}

// ParseResourceAttributes reads OTEL_RESOURCE_ATTRIBUTES: comma-separated key=value pairs,
// values percent-encoded where they hold a comma, an equals sign or a space (the W3C Baggage
// octet rules the specification uses).
func ParseResourceAttributes(s string) ([]attribute.KeyValue, error) {
	var attrs []attribute.KeyValue
	for pair := range strings.SplitSeq(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %q is not key=value", pair)
		}
		val, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: the value of %s is not percent-encoded properly", k)
		}
		attrs = append(attrs, attribute.String(k, val))
	}
	return attrs, nil
}

// buildVersion is stamped by the image build (deploy/images/build.sh: -ldflags -X
// rentalplatform/libs/telemetry.buildVersion=<git describe>), the same version the image's
// org.opencontainers.image.version label carries. It is the linker's to set, never written at
// run time.
var buildVersion string

// Version is service.version: the version the image build stamped, else the module version the
// program was built as (a tagged `go install`), else the VCS revision the build recorded (with
// "-dirty" for uncommitted changes), else "devel" (a build with -buildvcs=false, or a test
// binary). OTEL_RESOURCE_ATTRIBUTES=service.version=… still overrides it.
func Version() string {
	if buildVersion != "" {
		return buildVersion
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	return rev[:min(len(rev), 12)] + dirty
}
