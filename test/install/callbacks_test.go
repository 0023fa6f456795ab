// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package install_test

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// The provider callback routes (docs/deploy.md, Routes, and what to expose). pawaPay and Daraja
// post from the internet, so apiserver.ingress.providerCallbacks routes theirs through the chart's
// Ingress; the upstream provider's route, exactly /internal/provider/callbacks, is for a provider
// inside the cluster and no Ingress ever routes it, nor /healthz. darajaCallbackURL is the
// manager's --daraja-callback-url.

// upstreamCallbackPath is the upstream provider's route (apiserver/server.go).
const upstreamCallbackPath = "/internal/provider/callbacks"

// callbackPaths are the Ingress paths of the pawaPay and Daraja routes, path to pathType.
var callbackPaths = map[string]networkingv1.PathType{
	"/internal/provider/callbacks/pawapay": networkingv1.PathTypeExact,
	"/internal/provider/callbacks/daraja/": networkingv1.PathTypePrefix,
}

var (
	// publicRequests must be routed by every apiserver Ingress rule (a host's rules taken
	// together): the merchant API and the hosted checkout.
	publicRequests = []string{"/api/v1/payments", "/api/v1/site-info", "/checkout/trx-1", "/checkout-assets/checkout.css"}
	// callbackRequests are what pawaPay and Daraja post (apiserver/server.go): routed with
	// providerCallbacks only.
	callbackRequests = []string{
		"/internal/provider/callbacks/pawapay",
		"/internal/provider/callbacks/daraja/daraja-ke/3f9a0c1d2e4b5a6c7d8e9f00",
		"/internal/provider/callbacks/daraja/daraja-ke/3f9a0c1d2e4b5a6c7d8e9f00/result",
		"/internal/provider/callbacks/daraja/daraja-ke/3f9a0c1d2e4b5a6c7d8e9f00/timeout",
	}
	// internalRequests are never routed: the upstream provider's callbacks, the probes, metrics.
	internalRequests = []string{upstreamCallbackPath, upstreamCallbackPath + "/", "/healthz", "/metrics", "/internal/anything"}
)

// ingressPath is one path of an Ingress rule.
type ingressPath struct {
	ingress, host string
	path          networkingv1.HTTPIngressPath
}

// ingressPaths are the paths of every Ingress of a render. Each must go to the apiserver Service's
// port; an Ingress without rules or with a default backend fails the test.
func ingressPaths(t *testing.T, objs []object) []ingressPath {
	t.Helper()
	var svcName string
	var svcPort int32
	if api := workloads(t, objs)["apiserver"]; api != nil {
		svcName = api.obj.u.GetName()
		for _, o := range ofKind(objs, "Service") {
			if o.u.GetName() == svcName {
				var svc corev1.Service
				convert(t, o, &svc)
				if len(svc.Spec.Ports) > 0 {
					svcPort = svc.Spec.Ports[0].Port
				}
			}
		}
	}
	var out []ingressPath
	for _, o := range ofKind(objs, "Ingress") {
		var ing networkingv1.Ingress
		convert(t, o, &ing)
		if ing.Spec.DefaultBackend != nil {
			t.Errorf("%s: a default backend routes every path", o)
		}
		if len(ing.Spec.Rules) == 0 {
			t.Errorf("%s: no rules", o)
		}
		for _, r := range ing.Spec.Rules {
			if r.HTTP == nil {
				t.Errorf("%s: a rule without http paths", o)
				continue
			}
			for _, p := range r.HTTP.Paths {
				if b := p.Backend.Service; b == nil || b.Name != svcName || b.Port.Number != svcPort {
					t.Errorf("%s: path %s goes to %+v, want the Service %s port %d", o, p.Path, p.Backend, svcName, svcPort)
				}
				out = append(out, ingressPath{ingress: ing.Name, host: r.Host, path: p})
			}
		}
	}
	return out
}

// pathMatches reports whether an Ingress path routes a request path, as Kubernetes defines the
// path types (Exact: the same path; Prefix: element by element, a trailing slash ignored).
// ImplementationSpecific is taken as the widest reading, a plain string prefix.
func pathMatches(p networkingv1.HTTPIngressPath, request string) bool {
	pt := networkingv1.PathTypeImplementationSpecific
	if p.PathType != nil {
		pt = *p.PathType
	}
	switch pt {
	case networkingv1.PathTypeExact:
		return p.Path == request
	case networkingv1.PathTypePrefix:
		want := strings.Split(strings.Trim(p.Path, "/"), "/")
		if want[0] == "" {
			return true // "/" routes everything
		}
		got := strings.Split(strings.Trim(request, "/"), "/")
		return len(got) >= len(want) && slices.Equal(got[:len(want)], want)
	default:
		return strings.HasPrefix(request, p.Path)
	}
}

// routedBy names the Ingresses (and hosts) whose paths route request.
func routedBy(paths []ingressPath, request string) []string {
	var by []string
	for _, p := range paths {
		if pathMatches(p.path, request) {
			by = append(by, fmt.Sprintf("%s host %q path %s (%s)", p.ingress, p.host, p.path.Path, pathTypeOf(p.path)))
		}
	}
	return by
}

func pathTypeOf(p networkingv1.HTTPIngressPath) networkingv1.PathType {
	if p.PathType == nil {
		return ""
	}
	return *p.PathType
}

// ingressWant is what the Ingresses of a render must route.
type ingressWant struct {
	ingress   bool     // the apiserver Ingress is rendered
	hosts     []string // its hosts ("" for a rule without a host)
	callbacks bool     // the pawaPay and Daraja routes too
}

// checkIngressRoutes checks a render's Ingresses against want: on every host the public routes,
// the callback routes exactly when asked (with their path types), never an internal one.
func checkIngressRoutes(t *testing.T, objs []object, want ingressWant) {
	t.Helper()
	paths := ingressPaths(t, objs)
	if !want.ingress {
		if len(paths) > 0 || len(ofKind(objs, "Ingress")) > 0 {
			t.Errorf("%d Ingresses rendered, want none", len(ofKind(objs, "Ingress")))
		}
		return
	}
	for _, req := range internalRequests {
		if by := routedBy(paths, req); len(by) > 0 {
			t.Errorf("%s is routed from outside the cluster by %q", req, by)
		}
	}
	hosts := want.hosts
	if len(hosts) == 0 {
		hosts = []string{""}
	}
	for _, host := range hosts {
		var onHost []ingressPath
		got := map[string]networkingv1.PathType{}
		for _, p := range paths {
			if p.host == host {
				onHost = append(onHost, p)
				if _, ok := callbackPaths[p.path.Path]; ok {
					got[p.path.Path] = pathTypeOf(p.path)
				}
			}
		}
		for _, req := range publicRequests {
			if len(routedBy(onHost, req)) == 0 {
				t.Errorf("host %q: %s is not routed", host, req)
			}
		}
		for _, req := range callbackRequests {
			if by := routedBy(onHost, req); (len(by) > 0) != want.callbacks {
				t.Errorf("host %q: %s routed by %q, want routed: %t", host, req, by, want.callbacks)
			}
		}
		wantPaths := map[string]networkingv1.PathType{}
		if want.callbacks {
			wantPaths = callbackPaths
		}
		if !maps.Equal(got, wantPaths) {
			t.Errorf("host %q: callback paths %v, want %v", host, got, wantPaths)
		}
	}
}

// darajaFlags are the --daraja-callback-url flags of a render's manager and apiserver.
func darajaFlags(t *testing.T, objs []object) (manager, apiserver []string) {
	t.Helper()
	ws := workloads(t, objs)
	if ws["manager"] == nil {
		t.Fatal("the render has no manager Deployment")
	}
	manager = argWithPrefix(ws["manager"].container, "--daraja-callback-url")
	if api := ws["apiserver"]; api != nil {
		apiserver = argWithPrefix(api.container, "--daraja-callback-url")
	}
	return manager, apiserver
}

// TestProviderCallbackValues renders the chart (no API server) with the provider callback values
// and with every value set: darajaCallbackURL becomes the manager's --daraja-callback-url, and
// apiserver.ingress.providerCallbacks routes the pawaPay and Daraja callbacks, in the apiserver's
// Ingress or, with providerCallbackAnnotations, in one of their own; no Ingress ever routes the
// upstream provider's route.
func TestProviderCallbackValues(t *testing.T) {
	helm := helmBinary(t)
	render := func(t *testing.T, set ...string) []object {
		t.Helper()
		args := []string{"template", release, chartDir(t), "--namespace", namespace}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		out, stderr, err := runSplit(helm, args...)
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		return parse(t, []byte(out))
	}
	const darajaURL = "https://pay.example.com/internal/provider/callbacks/daraja"
	ingress := []string{"apiserver.ingress.enabled=true", "apiserver.ingress.hosts={pay.example.com,checkout.example.com}"}
	hosts := []string{"pay.example.com", "checkout.example.com"}

	t.Run("defaults", func(t *testing.T) {
		objs := render(t)
		checkIngressRoutes(t, objs, ingressWant{})
		if m, a := darajaFlags(t, objs); len(m)+len(a) > 0 {
			t.Errorf("default values pass %q to the manager and %q to the apiserver, want no --daraja-callback-url", m, a)
		}
		// The Ingress on, the callback routes left at their default.
		checkIngressRoutes(t, render(t, ingress...), ingressWant{ingress: true, hosts: hosts})
		checkIngressRoutes(t, render(t, "apiserver.ingress.enabled=true"), ingressWant{ingress: true})
	})

	t.Run("darajaCallbackURL", func(t *testing.T) {
		m, a := darajaFlags(t, render(t, "darajaCallbackURL="+darajaURL))
		if want := []string{"--daraja-callback-url=" + darajaURL}; !slices.Equal(m, want) {
			t.Errorf("manager flags %q, want %q", m, want)
		}
		if len(a) > 0 {
			t.Errorf("the apiserver got %q", a)
		}
		// Beside --provider-callback-url, and with the apiserver off.
		objs := render(t, "darajaCallbackURL="+darajaURL, "providerCallbackURL=https://callbacks.example.com/internal/provider/callbacks", "apiserver.enabled=false")
		if m, _ := darajaFlags(t, objs); len(m) != 1 {
			t.Errorf("manager flags %q, want one --daraja-callback-url", m)
		}
		if p := argWithPrefix(workloads(t, objs)["manager"].container, "--provider-callback-url="); len(p) != 1 {
			t.Errorf("manager flags %q, want one --provider-callback-url", p)
		}
	})

	t.Run("callback routes in the apiserver Ingress", func(t *testing.T) {
		objs := render(t, append(ingress, "apiserver.ingress.providerCallbacks=true")...)
		if n := len(ofKind(objs, "Ingress")); n != 1 {
			t.Fatalf("%d Ingresses rendered, want 1", n)
		}
		checkIngressRoutes(t, objs, ingressWant{ingress: true, hosts: hosts, callbacks: true})
		// The Ingress off: nothing routed, whatever providerCallbacks says.
		checkIngressRoutes(t, render(t, "apiserver.ingress.providerCallbacks=true"), ingressWant{})
		// The annotations alone expose nothing.
		objs = render(t, append(ingress, "apiserver.ingress.providerCallbackAnnotations.allow=192.0.2.0/24")...)
		checkIngressRoutes(t, objs, ingressWant{ingress: true, hosts: hosts})
	})

	t.Run("callback routes in an Ingress of their own", func(t *testing.T) {
		objs := render(t, append(ingress, "apiserver.ingress.providerCallbacks=true",
			"apiserver.ingress.className=nginx",
			"apiserver.ingress.tls[0].secretName=pay-tls", "apiserver.ingress.tls[0].hosts={pay.example.com,checkout.example.com}",
			"apiserver.ingress.annotations.shared=main", "apiserver.ingress.annotations.limit=main",
			"apiserver.ingress.providerCallbackAnnotations.limit=callbacks",
			"apiserver.ingress.providerCallbackAnnotations.allow=192.0.2.0/24")...)
		checkIngressRoutes(t, objs, ingressWant{ingress: true, hosts: hosts, callbacks: true})
		byName := map[string]networkingv1.Ingress{}
		for _, o := range ofKind(objs, "Ingress") {
			var ing networkingv1.Ingress
			convert(t, o, &ing)
			byName[ing.Name] = ing
		}
		main, callbacks := byName["paygate-apiserver"], byName["paygate-apiserver-callbacks"]
		if len(byName) != 2 || main.Name == "" || callbacks.Name == "" {
			t.Fatalf("Ingresses %v, want paygate-apiserver and paygate-apiserver-callbacks", slices.Sorted(maps.Keys(byName)))
		}
		for _, p := range ingressPaths(t, objs) {
			_, isCallback := callbackPaths[p.path.Path]
			if isCallback != (p.ingress == callbacks.Name) {
				t.Errorf("%s routes %s", p.ingress, p.path.Path)
			}
		}
		if want := map[string]string{"shared": "main", "limit": "main"}; !maps.Equal(main.Annotations, want) {
			t.Errorf("%s annotations %v, want %v", main.Name, main.Annotations, want)
		}
		if want := map[string]string{"shared": "main", "limit": "callbacks", "allow": "192.0.2.0/24"}; !maps.Equal(callbacks.Annotations, want) {
			t.Errorf("%s annotations %v, want %v", callbacks.Name, callbacks.Annotations, want)
		}
		if c, m := callbacks.Spec.IngressClassName, main.Spec.IngressClassName; c == nil || m == nil || *c != *m {
			t.Errorf("ingressClassName: %v for the callbacks, %v for the rest", c, m)
		}
		if !reflect.DeepEqual(callbacks.Spec.TLS, main.Spec.TLS) || len(main.Spec.TLS) != 1 {
			t.Errorf("TLS: %v for the callbacks, %v for the rest", callbacks.Spec.TLS, main.Spec.TLS)
		}
	})

	// The apiserver asks pawaPay and Daraja to check their callbacks: networkPolicy.apiserver.extraEgress.
	t.Run("apiserver egress", func(t *testing.T) {
		egress := func(objs []object) (manager, apiserver []networkingv1.NetworkPolicyEgressRule) {
			for _, o := range ofKind(objs, "NetworkPolicy") {
				var np networkingv1.NetworkPolicy
				convert(t, o, &np)
				switch np.Name {
				case "paygate-manager":
					manager = np.Spec.Egress
				case "paygate-apiserver":
					apiserver = np.Spec.Egress
				}
			}
			return manager, apiserver
		}
		m0, a0 := egress(render(t, "networkPolicy.enabled=true"))
		m1, a1 := egress(render(t, "networkPolicy.enabled=true",
			"networkPolicy.apiserver.extraEgress[0].ports[0].protocol=TCP", "networkPolicy.apiserver.extraEgress[0].ports[0].port=443",
			"networkPolicy.apiserver.extraEgress[0].to[0].ipBlock.cidr=198.51.100.0/24"))
		if len(a0) == 0 || len(a1) != len(a0)+1 || !reflect.DeepEqual(a1[:len(a0)], a0) {
			t.Fatalf("apiserver egress rules: %d without extraEgress, %d with it, want one more", len(a0), len(a1))
		}
		last := a1[len(a1)-1]
		if len(last.Ports) != 1 || last.Ports[0].Port.IntValue() != 443 || len(last.To) != 1 || last.To[0].IPBlock == nil || last.To[0].IPBlock.CIDR != "198.51.100.0/24" {
			t.Errorf("the apiserver's extra egress rule is %+v", last)
		}
		if len(m0) == 0 || !reflect.DeepEqual(m0, m1) {
			t.Errorf("networkPolicy.apiserver.extraEgress changed the manager's egress")
		}
	})

	// Every ci/*-values.yaml and the defaults, as TestInstallDryRun applies them.
	for _, vs := range valueSets(t) {
		t.Run("values/"+vs.name, func(t *testing.T) {
			args := append([]string{"template", release, chartDir(t), "--namespace", namespace}, vs.args...)
			out, stderr, err := runSplit(helm, args...)
			if err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr)
			}
			objs := parse(t, []byte(out))
			v := valuesOf(t, vs)
			b := func(p string) bool { x, _ := value(v, p).(bool); return x }
			want := ingressWant{
				ingress:   b("apiserver.enabled") && b("apiserver.ingress.enabled"),
				callbacks: b("apiserver.ingress.providerCallbacks"),
			}
			if hs, _ := value(v, "apiserver.ingress.hosts").([]any); len(hs) > 0 {
				for _, h := range hs {
					want.hosts = append(want.hosts, fmt.Sprint(h))
				}
			}
			checkIngressRoutes(t, objs, want)
			var wantFlag []string
			if u, _ := value(v, "darajaCallbackURL").(string); u != "" {
				wantFlag = []string{"--daraja-callback-url=" + u}
			}
			if m, a := darajaFlags(t, objs); !slices.Equal(m, wantFlag) || len(a) > 0 {
				t.Errorf("--daraja-callback-url: %q for the manager, %q for the apiserver; want %q for the manager", m, a, wantFlag)
			}
		})
	}
}
