package k8s

import (
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/resmap"
)

// rendered is an overlay decoded into the Kubernetes API types.
type rendered struct {
	namespaces   []*corev1.Namespace
	accounts     []*corev1.ServiceAccount
	configMaps   map[string]*corev1.ConfigMap
	secrets      map[string]*corev1.Secret
	services     []*corev1.Service
	deployments  map[string]*appsv1.Deployment
	statefulSets map[string]*appsv1.StatefulSet
	hpas         []*autoscalingv2.HorizontalPodAutoscaler
	pdbs         []*policyv1.PodDisruptionBudget
	policies     []*networkingv1.NetworkPolicy
}

// kinds maps each kind the overlays may render to its API version and a new typed object.
var kinds = map[string]struct {
	apiVersion string
	new        func() any
}{
	"Namespace":               {"v1", func() any { return &corev1.Namespace{} }},
	"ServiceAccount":          {"v1", func() any { return &corev1.ServiceAccount{} }},
	"ConfigMap":               {"v1", func() any { return &corev1.ConfigMap{} }},
	"Secret":                  {"v1", func() any { return &corev1.Secret{} }},
	"Service":                 {"v1", func() any { return &corev1.Service{} }},
	"Deployment":              {"apps/v1", func() any { return &appsv1.Deployment{} }},
	"StatefulSet":             {"apps/v1", func() any { return &appsv1.StatefulSet{} }},
	"HorizontalPodAutoscaler": {"autoscaling/v2", func() any { return &autoscalingv2.HorizontalPodAutoscaler{} }},
	"PodDisruptionBudget":     {"policy/v1", func() any { return &policyv1.PodDisruptionBudget{} }},
	"NetworkPolicy":           {"networking.k8s.io/v1", func() any { return &networkingv1.NetworkPolicy{} }},
}

// render builds an overlay and decodes every object strictly: an unknown or misspelt field, a
// field given twice or a kind outside the list above fails the test, as `kubectl apply
// --validate=strict` would fail the deployment.
func render(t *testing.T, overlay string, images Images) *rendered {
	t.Helper()
	m, err := Render("overlays/"+overlay, images)
	if err != nil {
		t.Fatalf("kustomize build overlays/%s: %v", overlay, err)
	}
	return decode(t, m)
}

func decode(t *testing.T, m resmap.ResMap) *rendered {
	t.Helper()
	r := &rendered{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		deployments: map[string]*appsv1.Deployment{}, statefulSets: map[string]*appsv1.StatefulSet{}}
	for _, res := range m.Resources() {
		raw, err := res.MarshalJSON()
		if err != nil {
			t.Fatalf("%s: %v", res.CurId(), err)
		}
		k, ok := kinds[res.GetKind()]
		if !ok {
			t.Fatalf("%s: a kind this test does not know; add it to kinds with its API type", res.CurId())
		}
		if got := res.GetApiVersion(); got != k.apiVersion {
			t.Errorf("%s: apiVersion %s, want %s", res.CurId(), got, k.apiVersion)
		}
		obj := k.new()
		strict, err := sigsjson.UnmarshalStrict(raw, obj)
		if err != nil {
			t.Fatalf("%s: %v", res.CurId(), err)
		}
		for _, e := range strict {
			t.Errorf("%s: %v", res.CurId(), e)
		}
		switch o := obj.(type) {
		case *corev1.Namespace:
			r.namespaces = append(r.namespaces, o)
		case *corev1.ServiceAccount:
			r.accounts = append(r.accounts, o)
		case *corev1.ConfigMap:
			r.configMaps[o.Name] = o
		case *corev1.Secret:
			r.secrets[o.Name] = o
		case *corev1.Service:
			r.services = append(r.services, o)
		case *appsv1.Deployment:
			r.deployments[o.Name] = o
		case *appsv1.StatefulSet:
			r.statefulSets[o.Name] = o
		case *autoscalingv2.HorizontalPodAutoscaler:
			r.hpas = append(r.hpas, o)
		case *policyv1.PodDisruptionBudget:
			r.pdbs = append(r.pdbs, o)
		case *networkingv1.NetworkPolicy:
			r.policies = append(r.policies, o)
		}
	}
	return r
}

// TestStrictDecodingCatchesUnknownFields: the decoding render relies on refuses what the API
// server would refuse (a misspelt field, a field given twice), so a passing render means
// something.
func TestStrictDecodingCatchesUnknownFields(t *testing.T) {
	for _, raw := range []string{
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"},"spec":{"replica":2}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"},"spec":{"Replicas":2}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x","name":"y"}}`,
	} {
		strict, err := sigsjson.UnmarshalStrict([]byte(raw), &appsv1.Deployment{})
		if err == nil && len(strict) == 0 {
			t.Errorf("%s decoded without complaint", raw)
		}
	}
}

func TestOverlays(t *testing.T) {
	for _, tc := range []struct {
		overlay, namespace string
		minReplicas        int32 // of every program's HorizontalPodAutoscaler
		images             Images
		wantImage          func(program string) string
	}{
		{"dev", "rental-dev", 1, Images{}, func(p string) string { return ImageName(p) + ":dev" }},
		{"prod", "rental", 2, Images{}, func(p string) string { return ImageName(p) + ":dev" }},
		// What `make k8s` renders for a release.
		{"prod", "rental", 2, Images{Prefix: "registry.example/rental/", Tag: "1.4.2"},
			func(p string) string { return "registry.example/rental/" + p + ":1.4.2" }},
	} {
		t.Run(fmt.Sprintf("%s %+v", tc.overlay, tc.images), func(t *testing.T) {
			r := render(t, tc.overlay, tc.images)
			checkNamespace(t, r, tc.namespace)
			checkDeployments(t, r, tc.overlay, tc.wantImage)
			checkConcurrency(t, r)
			checkGoverningServices(t, r)
			checkAutoscaling(t, r, tc.minReplicas)
			checkNetworkPolicies(t, r, tc.namespace, defaultScraper)
		})
	}
}

// metricsPolicyPatch is the overlay patch docs/operations.md ("Kubernetes") gives for a
// Prometheus of another namespace or with other labels, as written there.
const metricsPolicyPatch = `  - target:
      kind: NetworkPolicy
      name: metrics-from-monitoring
    patch: |-
      - op: replace
        path: /spec/ingress/0/from
        value:
          - namespaceSelector:
              matchLabels:
                kubernetes.io/metadata.name: observability
            podSelector:
              matchLabels:
                app.kubernetes.io/name: prometheus
                app.kubernetes.io/instance: k8s
`

// TestMetricsPolicyPatch: the documented patch, on prod, admits its Prometheus alone to the
// metrics ports, and the base's no longer.
func TestMetricsPolicyPatch(t *testing.T) {
	docs, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(docs), metricsPolicyPatch) {
		t.Fatalf("docs/operations.md no longer gives this patch; change both:\n%s", metricsPolicyPatch)
	}
	overlay, err := filepath.Abs("overlays/prod")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, overlay) // kustomize takes a relative path alone
	if err != nil {
		t.Fatal(err)
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + filepath.ToSlash(rel) + "\npatches:\n" + metricsPolicyPatch
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Render(dir, Images{})
	if err != nil {
		t.Fatalf("kustomize build of prod with the patch: %v", err)
	}
	r := decode(t, m)
	checkNetworkPolicies(t, r, "rental",
		scraper{"observability", map[string]string{"app.kubernetes.io/name": "prometheus", "app.kubernetes.io/instance": "k8s"}},
		peer{"the base's prometheus", defaultScraper.namespace, defaultScraper.labels},
		peer{"another prometheus of observability", "observability", defaultScraper.labels})
}

func checkNamespace(t *testing.T, r *rendered, ns string) {
	if len(r.namespaces) != 1 || r.namespaces[0].Name != ns {
		t.Errorf("want the one Namespace %s, got %v", ns, r.namespaces)
	}
	if len(r.accounts) != 1 || r.accounts[0].AutomountServiceAccountToken == nil || *r.accounts[0].AutomountServiceAccountToken {
		t.Errorf("want one ServiceAccount that mounts no token, got %v", r.accounts)
	}
}

// checkDeployments: one Deployment per program, each with both probes on its own listener,
// every listener a named container port (the metrics one annotated for Prometheus), requests
// and limits, a non-root and locked-down security context, the image of §2, its configuration
// from ConfigMaps and Secret references that exist, its deployment environment, and a Service.
func checkDeployments(t *testing.T, r *rendered, overlay string, wantImage func(string) string) {
	var names []string
	for n := range r.deployments {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := slices.Sorted(slices.Values(Programs)); !slices.Equal(names, want) {
		t.Fatalf("Deployments %v, want one per program %v", names, want)
	}
	for _, name := range Programs {
		d := r.deployments[name]
		spec := d.Spec.Template.Spec
		if d.Spec.Replicas != nil {
			t.Errorf("%s: replicas %d set, but its HorizontalPodAutoscaler owns the count", name, *d.Spec.Replicas)
		}
		if len(spec.Containers) != 1 {
			t.Fatalf("%s: %d containers, want 1", name, len(spec.Containers))
		}
		c := spec.Containers[0]
		if c.Image != wantImage(name) {
			t.Errorf("%s: image %s, want %s", name, c.Image, wantImage(name))
		}
		if c.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("%s: imagePullPolicy %q", name, c.ImagePullPolicy)
		}
		env := containerEnv(t, r, name, c, overlay)
		checkEnvironment(t, name, env, overlay)
		checkListeners(t, d, c, env)
		// The listener the probes ask is the one the program listens on.
		addrVar := "HTTP_ADDR"
		if name == "gateway" {
			addrVar = "GATEWAY_ADDR"
		}
		_, port, err := net.SplitHostPort(env[addrVar])
		if err != nil {
			t.Fatalf("%s: %s=%q: %v", name, addrVar, env[addrVar], err)
		}
		for _, p := range []struct {
			what  string
			probe *corev1.Probe
			path  string
		}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
			if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path {
				t.Errorf("%s: %s probe %+v, want GET %s", name, p.what, p.probe, p.path)
				continue
			}
			if got := containerPort(c, p.probe.HTTPGet.Port); strconv.Itoa(int(got)) != port {
				t.Errorf("%s: %s probe on port %d, but %s listens on %s", name, p.what, got, addrVar, port)
			}
		}
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, lim := c.Resources.Requests[res], c.Resources.Limits[res]
			if req.IsZero() || lim.IsZero() || req.Cmp(lim) > 0 {
				t.Errorf("%s: %s request %s, limit %s: want both, request ≤ limit", name, res, req.String(), lim.String())
			}
		}
		psc, csc := spec.SecurityContext, c.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
			t.Errorf("%s: pod securityContext %+v, want runAsNonRoot and a non-zero runAsUser", name, psc)
		}
		if csc == nil || csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation ||
			csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem ||
			csc.Capabilities == nil || !slices.Contains(csc.Capabilities.Drop, "ALL") {
			t.Errorf("%s: container securityContext %+v, want no privilege escalation, a read-only root, every capability dropped", name, csc)
		}
		if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
			t.Errorf("%s mounts a service account token", name)
		}
		checkService(t, r, d, c)
	}
}

// containerEnv resolves what the program's environment will hold: its ConfigMaps (which must
// be rendered) and its Secret references (which must name keys of a rendered Secret in dev,
// and the Secret created beside the overlay in prod).
func containerEnv(t *testing.T, r *rendered, name string, c corev1.Container, overlay string) map[string]string {
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			t.Errorf("%s: envFrom %+v: only ConfigMaps", name, from)
			continue
		}
		cm := r.configMaps[from.ConfigMapRef.Name]
		if cm == nil {
			t.Errorf("%s: envFrom ConfigMap %s is not rendered", name, from.ConfigMapRef.Name)
			continue
		}
		for k, v := range cm.Data {
			env[k] = v
		}
	}
	for _, e := range c.Env {
		ref := e.ValueFrom
		if ref == nil || ref.SecretKeyRef == nil {
			env[e.Name] = e.Value
			continue
		}
		sec := r.secrets[ref.SecretKeyRef.Name]
		switch {
		case overlay == "prod" && sec != nil:
			t.Errorf("%s: prod renders Secret %s: its values would be in git", name, sec.Name)
		case overlay == "prod" && ref.SecretKeyRef.Name != "rental-platform-secrets":
			t.Errorf("%s: %s from Secret %s, want rental-platform-secrets", name, e.Name, ref.SecretKeyRef.Name)
		case overlay != "prod" && sec == nil:
			t.Errorf("%s: %s from Secret %s, which is not rendered", name, e.Name, ref.SecretKeyRef.Name)
		case overlay != "prod" && sec.Data[ref.SecretKeyRef.Key] == nil && sec.StringData[ref.SecretKeyRef.Key] == "":
			t.Errorf("%s: %s from key %s, which Secret %s lacks", name, e.Name, ref.SecretKeyRef.Key, sec.Name)
		}
		env[e.Name] = "secret:" + ref.SecretKeyRef.Key
	}
	want := []string{"HTTP_ADDR", "MONGODB_DATABASE", "MONGODB_URI", "REDIS_URL", "INTERNAL_AUTH_SECRET"}
	if name == "gateway" {
		want = []string{"GATEWAY_ADDR", "ADMIN_ADDR", "ADMIN_TOKEN", "MONGODB_DATABASE", "MONGODB_URI", "REDIS_URL",
			"INTERNAL_AUTH_SECRET", "VERIFICATION_URL", "COLLECTIONS_URL", "PAYMENTS_URL", "WEBHOOKS_URL"}
	}
	for _, k := range want {
		if env[k] == "" {
			t.Errorf("%s: no %s", name, k)
		}
	}
	for _, k := range []string{"INTERNAL_AUTH_SECRET", "ADMIN_TOKEN", "MONGODB_URI", "REDIS_URL"} {
		if v, ok := env[k]; ok && !strings.HasPrefix(v, "secret:") {
			t.Errorf("%s: %s is set in plain text, not from the Secret", name, k)
		}
	}
	return env
}

// checkEnvironment: deployment.environment.name is the overlay's, through the variable the
// programs read (DEPLOYMENT_ENVIRONMENT), not an OTEL_RESOURCE_ATTRIBUTES key they would
// export beside it (deployment.environment) or over it.
func checkEnvironment(t *testing.T, name string, env map[string]string, overlay string) {
	if got := env["DEPLOYMENT_ENVIRONMENT"]; got != overlay {
		t.Errorf("%s: DEPLOYMENT_ENVIRONMENT=%q, want %q", name, got, overlay)
	}
	for kv := range strings.SplitSeq(env["OTEL_RESOURCE_ATTRIBUTES"], ",") {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(strings.TrimSpace(k), "deployment.environment") {
			t.Errorf("%s: OTEL_RESOURCE_ATTRIBUTES sets %s: set DEPLOYMENT_ENVIRONMENT instead", name, kv)
		}
	}
}

// listeners are the variables naming each listener of a program, by the name of its container
// port: every one must be declared, so the NetworkPolicy evaluation covers every port the
// program listens on.
func listeners(program string) map[string]string {
	if program == "gateway" {
		return map[string]string{"http": "GATEWAY_ADDR", "admin": "ADMIN_ADDR", "metrics": "METRICS_ADDR"}
	}
	return map[string]string{"http": "HTTP_ADDR", "metrics": "METRICS_ADDR"}
}

// metricsAddr is the program's METRICS_ADDR: the environment's, else the default of
// libs/config (Reader.MetricsAddr): the host of the service's listener (the gateway's admin
// listener) with the port + 1000.
func metricsAddr(program string, env map[string]string) string {
	if v := env["METRICS_ADDR"]; v != "" {
		return v
	}
	from := env["HTTP_ADDR"]
	if program == "gateway" {
		from = env["ADMIN_ADDR"]
	}
	host, port, err := net.SplitHostPort(from)
	if err != nil {
		return ""
	}
	n, err := strconv.Atoi(port)
	if err != nil || n == 0 {
		return ""
	}
	return net.JoinHostPort(host, strconv.Itoa(n+1000))
}

// checkListeners: the container declares exactly the program's listeners, each under its name
// and on the port its variable gives, each on every interface of the pod (a scraper or the
// gateway reaches it on the pod's address); and the pod template tells Prometheus where the
// metrics are (the prometheus.io/* annotations of its pod discovery).
func checkListeners(t *testing.T, d *appsv1.Deployment, c corev1.Container, env map[string]string) {
	name := d.Name
	declared := map[string]int32{}
	for _, cp := range c.Ports {
		if _, dup := declared[cp.Name]; dup || cp.Name == "" {
			t.Errorf("%s: container port %q (%d): unnamed or named twice", name, cp.Name, cp.ContainerPort)
		}
		declared[cp.Name] = cp.ContainerPort
		if _, ok := listeners(name)[cp.Name]; !ok {
			t.Errorf("%s: container port %s (%d) is no listener of the program", name, cp.Name, cp.ContainerPort)
		}
	}
	var metricsPort string
	for portName, variable := range listeners(name) {
		addr := env[variable]
		if portName == "metrics" {
			addr = metricsAddr(name, env)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Errorf("%s: %s=%q: %v", name, variable, addr, err)
			continue
		}
		if portName == "metrics" {
			metricsPort = port
		}
		if host != "" && !net.ParseIP(host).IsUnspecified() {
			t.Errorf("%s: %s=%q listens on %s alone: unreachable on the pod's address", name, variable, addr, host)
		}
		if got, ok := declared[portName]; !ok || strconv.Itoa(int(got)) != port {
			t.Errorf("%s: %s listens on port %s, but container port %q is %d", name, variable, port, portName, got)
		}
	}
	ann := d.Spec.Template.Annotations
	for k, want := range map[string]string{
		"prometheus.io/scrape": "true",
		"prometheus.io/port":   metricsPort,
		"prometheus.io/path":   "/metrics",
	} {
		if ann[k] != want {
			t.Errorf("%s: pod annotation %s=%q, want %q", name, k, ann[k], want)
		}
	}
}

// containerPort resolves a probe's or Service's port (a number or a container port's name).
func containerPort(c corev1.Container, p intstr.IntOrString) int32 {
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	return 0
}

func checkService(t *testing.T, r *rendered, d *appsv1.Deployment, c corev1.Container) {
	pods := labels.Set(d.Spec.Template.Labels)
	found := false
	for _, s := range r.services {
		if len(s.Spec.Selector) == 0 || !labels.SelectorFromSet(s.Spec.Selector).Matches(pods) {
			continue
		}
		found = true
		for _, p := range s.Spec.Ports {
			switch containerPort(c, p.TargetPort) {
			case 0:
				t.Errorf("Service %s: targetPort %s is no port of %s", s.Name, p.TargetPort.String(), d.Name)
			case containerPort(c, intstr.FromString("metrics")):
				// Prometheus scrapes each pod; a Service would give it one replica at random
				// and put the internal listener behind a name anyone may resolve.
				t.Errorf("Service %s: targetPort %s is the metrics port of %s", s.Name, p.TargetPort.String(), d.Name)
			}
		}
	}
	if !found {
		t.Errorf("no Service selects the pods of %s", d.Name)
	}
}

// checkGoverningServices: MongoDB's headless Service publishes its pod's name before the pod is
// ready. The readiness probe itself initiates the replica set with the name mongodb-0.mongodb,
// which rs.initiate refuses while it does not resolve, and cluster DNS resolves a headless
// Service's pod names only once they are ready unless publishNotReadyAddresses is set. (Redis
// is reached through its ClusterIP, which must route to ready pods alone.)
func checkGoverningServices(t *testing.T, r *rendered) {
	ss := r.statefulSets["mongodb"]
	if ss == nil {
		t.Fatal("no StatefulSet mongodb")
	}
	var gov *corev1.Service
	for _, s := range r.services {
		if s.Name == ss.Spec.ServiceName {
			gov = s
		}
	}
	switch {
	case gov == nil:
		t.Errorf("StatefulSet mongodb: no Service %q governs it", ss.Spec.ServiceName)
	case gov.Spec.ClusterIP != corev1.ClusterIPNone:
		t.Errorf("StatefulSet mongodb: Service %s is not headless", gov.Name)
	case !gov.Spec.PublishNotReadyAddresses:
		t.Errorf("StatefulSet mongodb: Service %s must publish not-ready addresses (the probe initiates the set with the pod's name)", gov.Name)
	}
}

// checkConcurrency: the workers' concurrency is a setting of each worker's ConfigMap.
func checkConcurrency(t *testing.T, r *rendered) {
	for program, key := range map[string]string{
		"verification-svc": "VERIFICATION_EXPIRY_CONCURRENCY",
		"payments-svc":     "PAYMENTS_CONCURRENCY",
		"webhooks-svc":     "WEBHOOKS_CONCURRENCY",
	} {
		var v string
		for _, from := range r.deployments[program].Spec.Template.Spec.Containers[0].EnvFrom {
			if cm := r.configMaps[from.ConfigMapRef.Name]; cm != nil && cm.Data[key] != "" {
				v = cm.Data[key]
			}
		}
		if n, err := strconv.Atoi(v); err != nil || n < 1 {
			t.Errorf("%s: %s=%q in its ConfigMaps, want a positive number", program, key, v)
		}
	}
}

// checkAutoscaling: one HorizontalPodAutoscaler and one PodDisruptionBudget per program.
func checkAutoscaling(t *testing.T, r *rendered, minReplicas int32) {
	for _, name := range Programs {
		d := r.deployments[name]
		var hpas []string
		for _, h := range r.hpas {
			ref := h.Spec.ScaleTargetRef
			if ref.Kind != "Deployment" || ref.Name != name || ref.APIVersion != "apps/v1" {
				continue
			}
			hpas = append(hpas, h.Name)
			if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < minReplicas || *h.Spec.MinReplicas > h.Spec.MaxReplicas {
				t.Errorf("HPA %s: replicas %v..%d, want at least %d", h.Name, h.Spec.MinReplicas, h.Spec.MaxReplicas, minReplicas)
			}
			if len(h.Spec.Metrics) == 0 {
				t.Errorf("HPA %s scales on nothing", h.Name)
			}
		}
		if len(hpas) != 1 {
			t.Errorf("%s: HorizontalPodAutoscalers %v, want one", name, hpas)
		}
		var pdbs []string
		for _, p := range r.pdbs {
			sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
			if err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				continue
			}
			pdbs = append(pdbs, p.Name)
			if p.Spec.MaxUnavailable == nil && p.Spec.MinAvailable == nil {
				t.Errorf("PDB %s bounds nothing", p.Name)
			}
		}
		if len(pdbs) != 1 {
			t.Errorf("%s: PodDisruptionBudgets %v select its pods, want one", name, pdbs)
		}
	}
}

// peer sends traffic: a pod of a namespace, or the world outside the cluster (no namespace,
// no labels).
type peer struct {
	name      string
	namespace string // "": outside the cluster
	labels    map[string]string
}

// scraper is the Prometheus the metrics ports admit: its pods' namespace and labels.
type scraper struct {
	namespace string
	labels    map[string]string
}

// defaultScraper is the base's (NetworkPolicy metrics-from-monitoring).
var defaultScraper = scraper{"monitoring", map[string]string{"app.kubernetes.io/name": "prometheus"}}

// elsewhere is a namespace that is neither the platform's nor the scraper's.
const elsewhere = "elsewhere"

// checkNetworkPolicies evaluates the rendered NetworkPolicies (ingress) for every pair of
// sender and port the platform's pods listen on: only the gateway reaches the services' APIs,
// only the programs reach MongoDB and Redis, anyone reaches the gateway's public port, only
// pods labelled as admin clients its admin port, and only sc, the Prometheus of its namespace,
// each program's metrics port, where no one else gets in. Senders: the platform's own pods
// (namespace ns), the same labels in another namespace, Prometheus, its labels in another
// namespace and in ns, another pod of its namespace, the outside world, and extra.
func checkNetworkPolicies(t *testing.T, r *rendered, ns string, sc scraper, extra ...peer) {
	type target struct {
		name      string
		labels    map[string]string
		container corev1.Container
	}
	var targets []target
	for _, d := range r.deployments {
		targets = append(targets, target{d.Name, d.Spec.Template.Labels, d.Spec.Template.Spec.Containers[0]})
	}
	for _, s := range r.statefulSets {
		targets = append(targets, target{s.Name, s.Spec.Template.Labels, s.Spec.Template.Spec.Containers[0]})
	}
	if len(r.statefulSets) != 2 || r.statefulSets["mongodb"] == nil || r.statefulSets["redis"] == nil {
		t.Fatalf("want the StatefulSets mongodb and redis, got %d", len(r.statefulSets))
	}
	admin := map[string]string{"rental-platform.io/admin-client": "true"}
	other := map[string]string{"app": "other"}
	peers := []peer{
		{"outside", "", nil},
		{"another pod", ns, other},
		{"an admin client", ns, admin},
		{"an admin client of another namespace", elsewhere, admin},
		{"prometheus", sc.namespace, sc.labels},
		{"another pod of prometheus' namespace", sc.namespace, other},
		{"prometheus' labels in another namespace", elsewhere, sc.labels},
		{"prometheus' labels in the platform's namespace", ns, sc.labels},
	}
	for _, tg := range targets {
		peers = append(peers, peer{tg.name, ns, tg.labels}, peer{tg.name + " of another namespace", elsewhere, tg.labels})
	}
	peers = append(peers, extra...)
	nsLabels := func(name string) map[string]string {
		// What the API server sets on every namespace; the platform's keeps its own labels too.
		set := map[string]string{"kubernetes.io/metadata.name": name}
		for _, n := range r.namespaces {
			if n.Name == name {
				maps.Copy(set, n.Labels)
			}
		}
		return set
	}
	for _, tg := range targets {
		for _, cp := range tg.container.Ports {
			for _, from := range peers {
				got := allowed(r.policies, nsLabels, from, ns, tg.labels, tg.container, cp)
				want := expected(from.name, tg.name, cp.Name)
				if got != want {
					t.Errorf("%s (namespace %q) → %s:%s (%d): allowed %v, want %v", from.name, from.namespace, tg.name, cp.Name, cp.ContainerPort, got, want)
				}
			}
		}
	}
}

// expected is the rule of docs/operations.md: who may reach a port. Prometheus gets each
// program's metrics port and, like every sender, the gateway's public port: nothing else.
func expected(from, to, port string) bool {
	isProgram := func(n string) bool { return slices.Contains(Programs, n) }
	switch {
	case isProgram(to) && port == "metrics":
		return from == "prometheus"
	case to == "gateway" && port == "http":
		return true
	case to == "gateway" && port == "admin":
		return from == "an admin client"
	case isProgram(to):
		return from == "gateway"
	case to == "mongodb" || to == "redis":
		return isProgram(from)
	}
	return false
}

// allowed evaluates ingress NetworkPolicies as the API defines them: a pod no policy selects
// takes everything; a selected pod takes what any of its policies' rules lets in. The target
// is a pod of namespace ns; a policy selects pods of its own namespace alone.
func allowed(policies []*networkingv1.NetworkPolicy, nsLabels func(string) map[string]string, from peer, ns string, to map[string]string, c corev1.Container, port corev1.ContainerPort) bool {
	selected := false
	for _, p := range policies {
		if p.Namespace != ns || !slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !matches(&p.Spec.PodSelector, to) {
			continue
		}
		selected = true
		for _, rule := range p.Spec.Ingress {
			if portMatches(rule.Ports, c, port) && peerMatches(rule.From, from, p.Namespace, nsLabels) {
				return true
			}
		}
	}
	return !selected
}

func portMatches(ports []networkingv1.NetworkPolicyPort, c corev1.Container, port corev1.ContainerPort) bool {
	if len(ports) == 0 {
		return true
	}
	proto := func(p *corev1.Protocol) corev1.Protocol {
		if p == nil || *p == "" {
			return corev1.ProtocolTCP
		}
		return *p
	}
	for _, p := range ports {
		if proto(p.Protocol) != proto(&port.Protocol) {
			continue
		}
		if p.Port == nil {
			return true
		}
		// A named port is looked up on the target's container; EndPort makes a number a range.
		n := containerPort(c, *p.Port)
		if n == port.ContainerPort || (p.EndPort != nil && n != 0 && n <= port.ContainerPort && port.ContainerPort <= *p.EndPort) {
			return true
		}
	}
	return false
}

// peerMatches: a podSelector alone means pods of the policy's namespace; a namespaceSelector
// alone, every pod of the namespaces it matches; both in one peer, the pods both match.
func peerMatches(froms []networkingv1.NetworkPolicyPeer, from peer, policyNS string, nsLabels func(string) map[string]string) bool {
	if len(froms) == 0 {
		return true
	}
	for _, f := range froms {
		switch {
		case f.IPBlock != nil:
			// No policy here names addresses. Pod addresses may fall in a block too, so one
			// counts for every sender: a rule that must admit a few senders alone fails.
			return true
		case from.namespace == "":
			// A pod or namespace selector never matches traffic from outside the cluster.
		case f.NamespaceSelector != nil:
			if matches(f.NamespaceSelector, nsLabels(from.namespace)) && (f.PodSelector == nil || matches(f.PodSelector, from.labels)) {
				return true
			}
		case f.PodSelector != nil:
			if from.namespace == policyNS && matches(f.PodSelector, from.labels) {
				return true
			}
		}
	}
	return false
}

func matches(sel *metav1.LabelSelector, set map[string]string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set(set))
}
