package servicetest

import (
	"fmt"
	"io"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is one scrape of a Prometheus endpoint, by metric family name.
type Metrics map[string]*dto.MetricFamily

// Scrape GETs url (a program's /metrics) and parses the text format.
func Scrape(t testing.TB, url string) Metrics {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		t.Fatalf("scrape %s: %d %s", url, res.StatusCode, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	return fams
}

// Find returns the series of family name whose labels include labels, or nil.
func (m Metrics) Find(name string, labels map[string]string) *dto.Metric {
next:
	for _, s := range m[name].GetMetric() {
		for k, v := range labels {
			found := false
			for _, l := range s.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
					break
				}
			}
			if !found {
				continue next
			}
		}
		return s
	}
	return nil
}

// Series is Find, failing the test, with the series the family has, when there is none.
func (m Metrics) Series(t testing.TB, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	if s := m.Find(name, labels); s != nil {
		return s
	}
	var have []string
	for _, s := range m[name].GetMetric() {
		have = append(have, fmt.Sprint(s.GetLabel()))
	}
	t.Fatalf("no series %s%v; the family has %v", name, labels, have)
	return nil
}

// Histogram, Gauge and Counter read the series' value (Series).
func (m Metrics) Histogram(t testing.TB, name string, labels map[string]string) *dto.Histogram {
	t.Helper()
	return m.Series(t, name, labels).GetHistogram()
}

// Gauge is the value of a gauge series (Series).
func (m Metrics) Gauge(t testing.TB, name string, labels map[string]string) float64 {
	t.Helper()
	return m.Series(t, name, labels).GetGauge().GetValue()
}

// Counter is the value of a counter series (Series).
func (m Metrics) Counter(t testing.TB, name string, labels map[string]string) float64 {
	t.Helper()
	return m.Series(t, name, labels).GetCounter().GetValue()
}
