// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build dev

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/console"
	"github.com/paygate/paygate/internal/credentials"
)

// credentialsFile is <state-dir>/credentials.env: the demo merchants' credentials of both
// environments and their webhook signing secrets as export lines a shell can source (mode 0600),
// the console owner's sign-in, and the first approved merchant's sandbox set again as PAYGATE_*.
// `paygate dev` writes it once everything is up and again whenever a credential changes while it
// runs: a merchant approved with kubectl gets production keys, a rotation replaces keys.
type credentialsFile struct {
	c       client.Reader
	path    string
	baseURL string
	owner   *console.DemoUser
	// written is what the file holds (as last written by refresh).
	written string
}

// refreshEvery is how often `paygate dev` reads the credentials again to keep the file current.
const refreshEvery = 2 * time.Second

// refresh writes the file when what it would hold differs from what was written, and returns the
// export lines that changed, as changedCredentials describes them (none at the first write, or
// when only comments changed).
func (f *credentialsFile) refresh(ctx context.Context) ([]string, error) {
	text, err := f.render(ctx)
	if err != nil || text == f.written {
		return nil, err
	}
	if err := writeFileAtomic(f.path, []byte(text), 0o600); err != nil {
		return nil, fmt.Errorf("writing the credentials file: %w", err)
	}
	first := f.written == ""
	changes := changedCredentials(f.written, text)
	f.written = text
	if first {
		return nil, nil
	}
	return changes, nil
}

// keepFresh calls refresh every refreshEvery until ctx ends, and tells out what changed.
func (f *credentialsFile) keepFresh(ctx context.Context, out io.Writer, log logr.Logger) {
	t := time.NewTicker(refreshEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changes, err := f.refresh(ctx)
		if err != nil {
			if ctx.Err() == nil {
				log.V(1).Info("Reading the credentials again failed; trying again", "error", err.Error())
			}
			continue
		}
		if len(changes) > 0 {
			fmt.Fprintf(out, "\nCredentials changed (%s): rewrote %s.\nSource it again in your other terminal: . %s\n",
				strings.Join(changes, "; "), f.path, f.path)
		}
	}
}

// render is the file's text from the demo merchants and their Secrets as they are now.
func (f *credentialsFile) render(ctx context.Context) (string, error) {
	var list paygatev1.MerchantList
	if err := f.c.List(ctx, &list, client.InNamespace(devNamespace)); err != nil {
		return "", fmt.Errorf("listing the demo merchants: %w", err)
	}
	merchants := list.Items
	sort.Slice(merchants, func(i, j int) bool { return merchants[i].Name < merchants[j].Name })
	var b strings.Builder
	b.WriteString("# Paygate demo credentials, written by `paygate dev`, and again when they change while it runs.\n")
	b.WriteString("# Source it: . " + f.path + "\n")
	b.WriteString("# These are local development secrets: never commit or share them.\n")
	b.WriteString("export PAYGATE_BASE_URL=" + f.baseURL + "\n")
	var defaults []string
	for _, m := range merchants {
		prefix := strings.ToUpper(strings.ReplaceAll(m.Name, "-", "_"))
		fmt.Fprintf(&b, "\n# %s (%s/%s): business %s, merchant id %d\n", m.Spec.DisplayName, m.Namespace, m.Name, m.Spec.BusinessStatus, m.Status.ID)
		for _, env := range paygatev1.Environments {
			var secret corev1.Secret
			err := f.c.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: credentials.SecretName(m.Name, env)}, &secret)
			if client.IgnoreNotFound(err) != nil {
				return "", fmt.Errorf("reading %s credentials of %s: %w", env, m.Name, err)
			}
			set, ok := credentials.SetFromData(secret.Data)
			if err != nil || !ok {
				fmt.Fprintf(&b, "# no %s credentials: %s\n", env, productionNote(&m))
				continue
			}
			e := strings.ToUpper(string(env))
			fmt.Fprintf(&b, "export %s_%s_MERCHANT_KEY=%s\n", prefix, e, set.BusinessID)
			fmt.Fprintf(&b, "export %s_%s_API_KEY=%s\n", prefix, e, set.APIKey)
			fmt.Fprintf(&b, "export %s_%s_API_SECRET=%s\n", prefix, e, set.APISecret)
			if defaults == nil && env == paygatev1.EnvironmentSandbox && m.Spec.BusinessStatus == paygatev1.BusinessApproved {
				defaults = []string{"PAYGATE_ENVIRONMENT=sandbox", "PAYGATE_MERCHANT_KEY=" + set.BusinessID,
					"PAYGATE_API_KEY=" + set.APIKey, "PAYGATE_API_SECRET=" + set.APISecret}
			}
		}
		var secret corev1.Secret
		err := f.c.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: credentials.WebhookSecretName(m.Name)}, &secret)
		switch {
		case client.IgnoreNotFound(err) != nil:
			return "", fmt.Errorf("reading the webhook signing secret of %s: %w", m.Name, err)
		case err != nil:
			b.WriteString("# no webhook signing secret yet\n")
		default:
			fmt.Fprintf(&b, "export %s_WEBHOOK_SECRET=%s\n", prefix, secret.Data[credentials.KeySigningSecret])
		}
	}
	if f.owner != nil {
		b.WriteString("\n# The merchant console (docs/console.md): sign in at PAYGATE_CONSOLE_URL; the second factor's\n")
		b.WriteString("# current code: bin/paygate console code (reads PAYGATE_CONSOLE_TOTP_SECRET).\n")
		b.WriteString("export PAYGATE_CONSOLE_URL=" + f.baseURL + "/console/\n")
		b.WriteString("export PAYGATE_CONSOLE_EMAIL=" + f.owner.Email + "\n")
		b.WriteString("export PAYGATE_CONSOLE_PASSWORD=" + f.owner.Password + "\n")
		b.WriteString("export PAYGATE_CONSOLE_TOTP_SECRET=" + f.owner.TOTPSecret + "\n")
	}
	if defaults != nil {
		b.WriteString("\n# Defaults: the first approved merchant, sandbox.\n")
		for _, d := range defaults {
			b.WriteString("export " + d + "\n")
		}
	}
	return b.String(), nil
}

func productionNote(m *paygatev1.Merchant) string {
	return fmt.Sprintf("production needs an approved business (businessStatus is %s)", m.Spec.BusinessStatus)
}

// exports are the NAME=value export lines of a credentials file, by name.
func exports(text string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "="); ok && strings.HasPrefix(line, "export ") {
			out[k] = v
		}
	}
	return out
}

// changedCredentials describes which export lines differ between two versions of the file, a
// credential set at a time: "KAHAWA_CAFE_PRODUCTION_* added", "DUKA_ONLINE_SANDBOX_* changed",
// "PAYGATE_* changed", sorted.
func changedCredentials(before, after string) []string {
	old, cur := exports(before), exports(after)
	group := func(name string) string {
		if strings.HasPrefix(name, "PAYGATE_") {
			return "PAYGATE_*"
		}
		for _, suffix := range []string{"_MERCHANT_KEY", "_API_KEY", "_API_SECRET"} {
			if p, ok := strings.CutSuffix(name, suffix); ok {
				return p + "_*"
			}
		}
		return name
	}
	what := map[string]string{}
	note := func(name, change string) {
		g := group(name)
		if prev, ok := what[g]; ok && prev != change {
			change = "changed"
		}
		what[g] = change
	}
	for k, v := range cur {
		if was, ok := old[k]; !ok {
			note(k, "added")
		} else if was != v {
			note(k, "changed")
		}
	}
	for k := range old {
		if _, ok := cur[k]; !ok {
			note(k, "removed")
		}
	}
	var out []string
	for g, change := range what {
		out = append(out, g+" "+change)
	}
	sort.Strings(out)
	return out
}

// writeFileAtomic writes the file through a temporary file in the same directory and a rename, so
// that a shell sourcing it meanwhile reads the old or the new version, never half of one.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is left to remove
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
