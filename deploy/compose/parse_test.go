package compose

// TestParseMetricsAndEnvironment runs in `make test` (no Docker): what compose.yaml,
// compose.ci.yaml and prometheus.yml must agree on for the programs' metrics to be scraped,
// and for their deployment environment to be the one they report. `make compose-test` runs
// the files for real and scrapes every program.

import (
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// composeFile is what this test reads of a Compose file (YAML anchors and merge keys resolved,
// no interpolation).
type composeFile struct {
	Services map[string]struct {
		Profiles    []string          `yaml:"profiles"`
		Environment map[string]string `yaml:"environment"`
		Ports       []string          `yaml:"ports"`
		Volumes     []string          `yaml:"volumes"`
	} `yaml:"services"`
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestParseMetricsAndEnvironment(t *testing.T) {
	var users, ci composeFile
	readYAML(t, "compose.yaml", &users)
	readYAML(t, "compose.ci.yaml", &ci)
	var prom struct {
		ScrapeConfigs []struct {
			JobName      string `yaml:"job_name"`
			DNSSDConfigs []struct {
				Names []string `yaml:"names"`
				Type  string   `yaml:"type"`
				Port  int      `yaml:"port"`
			} `yaml:"dns_sd_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, "prometheus.yml", &prom)

	for _, p := range programs {
		env := users.Services[p].Environment
		// deployment.environment.name comes from DEPLOYMENT_ENVIRONMENT alone; a
		// deployment.environment resource attribute is another, older key beside it.
		if got := env["DEPLOYMENT_ENVIRONMENT"]; got != "compose" {
			t.Errorf("compose.yaml: %s: DEPLOYMENT_ENVIRONMENT=%q, want compose", p, got)
		}
		for kv := range strings.SplitSeq(env["OTEL_RESOURCE_ATTRIBUTES"], ",") {
			if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(strings.TrimSpace(k), "deployment.environment") {
				t.Errorf("compose.yaml: %s: OTEL_RESOURCE_ATTRIBUTES sets %s: set DEPLOYMENT_ENVIRONMENT instead", p, kv)
			}
		}

		// On every interface of the container, so the project network reaches it; never
		// published.
		host, port, err := net.SplitHostPort(env["METRICS_ADDR"])
		if err != nil {
			t.Errorf("compose.yaml: %s: METRICS_ADDR=%q: %v", p, env["METRICS_ADDR"], err)
			continue
		}
		if host != "" && !net.ParseIP(host).IsUnspecified() {
			t.Errorf("compose.yaml: %s: METRICS_ADDR=%q: no container but its own reaches %s", p, env["METRICS_ADDR"], host)
		}
		for _, pub := range users.Services[p].Ports {
			parts := strings.Split(pub, ":")
			if strings.Split(parts[len(parts)-1], "/")[0] == port {
				t.Errorf("compose.yaml: %s publishes its metrics port: %s", p, pub)
			}
		}

		// The metrics profile's Prometheus scrapes that port, on every replica.
		jobs := 0
		for _, sc := range prom.ScrapeConfigs {
			if sc.JobName != p {
				continue
			}
			jobs++
			if len(sc.DNSSDConfigs) != 1 || !slices.Equal(sc.DNSSDConfigs[0].Names, []string{p}) ||
				sc.DNSSDConfigs[0].Type != "A" || port != strconv.Itoa(sc.DNSSDConfigs[0].Port) {
				t.Errorf("prometheus.yml: job %s: %+v, want the A records of %s on port %s", p, sc.DNSSDConfigs, p, port)
			}
		}
		if jobs != 1 {
			t.Errorf("prometheus.yml: %d jobs %s, want one", jobs, p)
		}

		// On the host's network the CI override keeps every listener on 127.0.0.1.
		if addr := ci.Services[p].Environment["METRICS_ADDR"]; !strings.HasPrefix(addr, "127.0.0.1:") {
			t.Errorf("compose.ci.yaml: %s: METRICS_ADDR=%q, want 127.0.0.1:<a free port>", p, addr)
		}
	}

	pr, ok := users.Services["prometheus"]
	switch {
	case !ok:
		t.Error("compose.yaml has no service prometheus")
	case !slices.Equal(pr.Profiles, []string{"metrics"}):
		t.Errorf("compose.yaml: prometheus runs with profiles %v, want [metrics] alone (on demand)", pr.Profiles)
	case !slices.ContainsFunc(pr.Volumes, func(v string) bool { return strings.HasPrefix(v, "./prometheus.yml:") }):
		t.Errorf("compose.yaml: prometheus mounts %v, not ./prometheus.yml", pr.Volumes)
	}
	for _, pub := range pr.Ports {
		if !strings.HasPrefix(pub, "127.0.0.1:") {
			t.Errorf("compose.yaml: prometheus publishes %s beyond loopback", pub)
		}
	}
}
