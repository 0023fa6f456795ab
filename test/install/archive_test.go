// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package install_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The history archive's settings in the pods (docs/deploy.md, History in PostgreSQL): the
// Secret holding the DSN and the optional CA certificate are mounted at these paths.
const (
	archiveDSNDir  = "/etc/paygate/archive"
	archiveCADir   = "/etc/paygate/archive-ca"
	archiveDSNFlag = "--archive-dsn-file=" + archiveDSNDir + "/dsn"
)

// archiveWant is what the manager and apiserver Deployments must carry for the archive. The zero
// value: the archive is off, so neither carries an --archive-* flag, an archive volume or mount,
// or the PGSSL* variables.
type archiveWant struct {
	on              bool
	secret, key     string // the Secret holding the DSN and its key
	caSecret, caKey string // the CA certificate's Secret and key; "" without one
	// The --archive-* flags, in order.
	managerArgs, apiserverArgs []string
}

// checkArchive checks the rendered manager and apiserver Deployments (found by their container's
// name) against want. A render must have a manager.
func checkArchive(t *testing.T, objs []object, want archiveWant) {
	t.Helper()
	found := map[string]int{}
	for _, o := range objs {
		if o.u.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.u.Object, &d); err != nil {
			t.Fatalf("%s: %v", o, err)
		}
		pod := d.Spec.Template.Spec
		if len(pod.Containers) == 0 {
			continue
		}
		c := pod.Containers[0]
		var wantArgs []string
		switch c.Name {
		case "manager":
			wantArgs = want.managerArgs
		case "apiserver":
			wantArgs = want.apiserverArgs
		default:
			continue
		}
		found[c.Name]++

		var args []string
		for _, a := range c.Args {
			if strings.HasPrefix(a, "--archive-") {
				args = append(args, a)
			}
		}
		if !slices.Equal(args, wantArgs) {
			t.Errorf("%s: the %s's archive flags are\n  %q\nwant\n  %q", o, c.Name, args, wantArgs)
		}

		// Mounts and volumes: exactly the archive's, read-only, with only the named keys.
		var mounts []string
		for _, m := range c.VolumeMounts {
			if strings.HasPrefix(m.Name, "archive") || strings.HasPrefix(m.MountPath, archiveDSNDir) {
				mounts = append(mounts, fmt.Sprintf("%s:%s:ro=%t", m.Name, m.MountPath, m.ReadOnly))
			}
		}
		var volumes []string
		for _, v := range pod.Volumes {
			if !strings.HasPrefix(v.Name, "archive") {
				continue
			}
			if v.Secret == nil {
				volumes = append(volumes, v.Name+": not a Secret volume")
				continue
			}
			mode := "unset"
			if v.Secret.DefaultMode != nil {
				mode = fmt.Sprintf("%#o", *v.Secret.DefaultMode)
			}
			var items []string
			for _, it := range v.Secret.Items {
				items = append(items, it.Key+"->"+it.Path)
			}
			volumes = append(volumes, fmt.Sprintf("%s:%s:%s:%s", v.Name, v.Secret.SecretName, mode, strings.Join(items, ",")))
		}
		var wantMounts, wantVolumes []string
		if want.on {
			wantMounts = append(wantMounts, "archive-dsn:"+archiveDSNDir+":ro=true")
			wantVolumes = append(wantVolumes, fmt.Sprintf("archive-dsn:%s:0440:%s->dsn", want.secret, want.key))
			if want.caSecret != "" {
				wantMounts = append(wantMounts, "archive-ca:"+archiveCADir+":ro=true")
				wantVolumes = append(wantVolumes, fmt.Sprintf("archive-ca:%s:0440:%s->ca.crt", want.caSecret, want.caKey))
			}
		}
		if !slices.Equal(mounts, wantMounts) {
			t.Errorf("%s: the %s's archive mounts are %q, want %q", o, c.Name, mounts, wantMounts)
		}
		if !slices.Equal(volumes, wantVolumes) {
			t.Errorf("%s: the archive volumes are %q, want %q", o, volumes, wantVolumes)
		}

		// With a CA: libpq's defaults that pgx reads, pointing at the mounted certificate.
		var env []string
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "PGSSL") {
				env = append(env, e.Name+"="+e.Value)
			}
		}
		var wantEnv []string
		if want.on && want.caSecret != "" {
			wantEnv = []string{"PGSSLMODE=verify-full", "PGSSLROOTCERT=" + archiveCADir + "/ca.crt"}
		}
		if !slices.Equal(env, wantEnv) {
			t.Errorf("%s: the %s's PGSSL* variables are %q, want %q", o, c.Name, env, wantEnv)
		}

		// The files are mode 0440, owned by root and the pod's fsGroup: the non-root process
		// reads them through that group.
		if want.on && (pod.SecurityContext == nil || pod.SecurityContext.FSGroup == nil || *pod.SecurityContext.FSGroup == 0) {
			t.Errorf("%s: the archive is on but the pod has no fsGroup: its non-root process cannot read the 0440 Secret files", o)
		}
		if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s: the %s's root filesystem is not read-only", o, c.Name)
		}
	}
	if found["manager"] != 1 || found["apiserver"] > 1 {
		t.Errorf("the render has %d manager and %d apiserver Deployments, want 1 and at most 1", found["manager"], found["apiserver"])
	}
	if want.apiserverArgs != nil && found["apiserver"] == 0 {
		t.Error("the render has no apiserver Deployment to check")
	}
}

// archiveWantFromValues is what a value set (the chart's defaults, overridden by its values
// file) must render for the archive.
func archiveWantFromValues(t *testing.T, vs valueSet) archiveWant {
	t.Helper()
	values := readValues(t, filepath.Join(chartDir(t), "values.yaml"))
	if len(vs.args) == 2 && vs.args[0] == "-f" {
		mergeValues(values, readValues(t, vs.args[1]))
	}
	ar, _ := values["archive"].(map[string]any)
	if on, _ := ar["enabled"].(bool); !on {
		return archiveWant{}
	}
	get := func(path ...string) any {
		var v any = ar
		for _, p := range path {
			v = v.(map[string]any)[p]
		}
		return v
	}
	str := func(path ...string) string { return fmt.Sprint(get(path...)) }
	num := func(path ...string) int { return int(get(path...).(float64)) }
	w := archiveWant{
		on:       true,
		secret:   str("existingSecret", "name"),
		key:      str("existingSecret", "key"),
		caSecret: str("caSecret", "name"),
		caKey:    str("caSecret", "key"),
		managerArgs: []string{
			archiveDSNFlag,
			fmt.Sprintf("--archive-max-conns=%d", num("maxConns", "manager")),
			"--archive-payments-after=" + str("retention", "payments"),
			"--archive-payouts-after=" + str("retention", "payouts"),
			"--archive-invoices-after=" + str("retention", "invoices"),
			"--archive-webhook-deliveries-after=" + str("retention", "webhookDeliveries"),
			"--archive-refunds-after=" + str("retention", "refunds"),
			"--archive-interval=" + str("interval"),
			fmt.Sprintf("--archive-batch-size=%d", num("batchSize")),
		},
	}
	if api, _ := values["apiserver"].(map[string]any); api["enabled"] == true {
		w.apiserverArgs = []string{archiveDSNFlag, fmt.Sprintf("--archive-max-conns=%d", num("maxConns", "apiserver"))}
	}
	return w
}

// mergeValues merges src into dst as Helm merges a values file into the defaults: maps key by
// key, any other value replaced.
func mergeValues(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeValues(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// TestArchiveValues renders the chart (no API server) with the archive's values: every flag in
// both Deployments, retentions of 0, the CA Secret, the fsGroup, and a clear failure when the
// archive is on without a Secret.
func TestArchiveValues(t *testing.T) {
	helm := helmBinary(t)
	render := func(t *testing.T, set ...string) ([]object, string, error) {
		t.Helper()
		args := []string{"template", release, chartDir(t), "--namespace", namespace}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		out, stderr, err := runSplit(helm, args...)
		if err != nil {
			return nil, stderr, err
		}
		return parse(t, []byte(out)), stderr, nil
	}

	t.Run("off by default", func(t *testing.T) {
		objs, stderr, err := render(t)
		if err != nil {
			t.Fatalf("helm template: %v\n%s", err, stderr)
		}
		checkArchive(t, objs, archiveWant{})
		// The values of an archive that is off are ignored, the Secret name included.
		objs, stderr, err = render(t, "archive.existingSecret.name=db", "archive.caSecret.name=db-ca")
		if err != nil {
			t.Fatalf("helm template: %v\n%s", err, stderr)
		}
		checkArchive(t, objs, archiveWant{})
	})

	// helm template and install fail (helm lint only reports a missing required value).
	t.Run("on without a Secret fails", func(t *testing.T) {
		_, stderr, err := render(t, "archive.enabled=true")
		if err == nil {
			t.Fatal("helm template with archive.enabled=true and no archive.existingSecret.name succeeded")
		}
		if !strings.Contains(stderr, "archive.existingSecret.name is empty") {
			t.Errorf("helm template failed without naming archive.existingSecret.name:\n%s", stderr)
		}
	})

	t.Run("every setting", func(t *testing.T) {
		objs, stderr, err := render(t,
			"archive.enabled=true",
			"archive.existingSecret.name=pg-app", "archive.existingSecret.key=uri",
			"archive.caSecret.name=pg-ca",
			"archive.maxConns.manager=3", "archive.maxConns.apiserver=12",
			"archive.retention.payments=720h", "archive.retention.payouts=0",
			"archive.retention.invoices=1h30m", "archive.retention.webhookDeliveries=0s", "archive.retention.refunds=2h",
			"archive.interval=45s", "archive.batchSize=500",
		)
		if err != nil {
			t.Fatalf("helm template: %v\n%s", err, stderr)
		}
		checkArchive(t, objs, archiveWant{
			on: true, secret: "pg-app", key: "uri", caSecret: "pg-ca", caKey: "ca.crt",
			managerArgs: []string{
				archiveDSNFlag, "--archive-max-conns=3",
				"--archive-payments-after=720h", "--archive-payouts-after=0",
				"--archive-invoices-after=1h30m", "--archive-webhook-deliveries-after=0s", "--archive-refunds-after=2h",
				"--archive-interval=45s", "--archive-batch-size=500",
			},
			apiserverArgs: []string{archiveDSNFlag, "--archive-max-conns=12"},
		})
		requireFSGroup(t, objs, 65532)
	})

	t.Run("fsGroup", func(t *testing.T) {
		on := []string{"archive.enabled=true", "archive.existingSecret.name=pg-app"}
		// The container's runAsGroup, else the pod's, else the image's 65532; one of the values'
		// own is kept.
		for _, tc := range []struct {
			set  []string
			want int64
		}{
			{set: []string{"securityContext.runAsGroup=2000", "podSecurityContext.runAsGroup=1000"}, want: 2000},
			{set: []string{"podSecurityContext.runAsGroup=1000"}, want: 1000},
			{set: []string{"podSecurityContext.fsGroup=3000", "securityContext.runAsGroup=2000"}, want: 3000},
		} {
			objs, stderr, err := render(t, append(on, tc.set...)...)
			if err != nil {
				t.Fatalf("helm template: %v\n%s", err, stderr)
			}
			requireFSGroup(t, objs, tc.want)
		}
	})
}

// requireFSGroup fails unless both Deployments' pods have fsGroup want.
func requireFSGroup(t *testing.T, objs []object, want int64) {
	t.Helper()
	n := 0
	for _, o := range objs {
		if o.u.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.u.Object, &d); err != nil {
			t.Fatalf("%s: %v", o, err)
		}
		n++
		sc := d.Spec.Template.Spec.SecurityContext
		if sc == nil || sc.FSGroup == nil || *sc.FSGroup != want {
			got := "none"
			if sc != nil && sc.FSGroup != nil {
				got = fmt.Sprint(*sc.FSGroup)
			}
			t.Errorf("%s: fsGroup %s, want %d", o, got, want)
		}
	}
	if n != 2 {
		t.Errorf("%d Deployments rendered, want 2", n)
	}
}
