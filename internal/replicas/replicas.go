// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package replicas counts the apiserver replicas that are serving, so that they can share a
// rate limit (docs/deploy.md, Rate limits across replicas).
//
// Each replica announces itself with a coordination.k8s.io Lease of its own,
// paygate-apiserver-<random id> in its namespace, labelled app.kubernetes.io/name=paygate and
// app.kubernetes.io/component=apiserver. It renews the Lease every RenewInterval (10 s) for
// LeaseDuration (30 s) and deletes it when it stops gracefully. At every renewal it lists the
// labelled Leases and counts those not expired: itself and the others alive. A replica that dies
// without deleting its Lease stops being counted once the Lease expires, at the next renewal of
// each other replica (within LeaseDuration + RenewInterval); its Lease is deleted by the others
// after ForgetAfter.
//
// Expiry compares a Lease's renewTime, written with the clock of the replica that renewed it,
// with the reader's clock: clocks a few seconds apart shift the expiry by as much.
package replicas

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// DefaultRenewInterval is how often a replica renews its Lease and counts the others.
	DefaultRenewInterval = 10 * time.Second
	// DefaultLeaseDuration is how long a Lease counts after its last renewal.
	DefaultLeaseDuration = 30 * time.Second
	// DefaultForgetAfter is how long after its expiry a Lease left by a replica that died is
	// deleted.
	DefaultForgetAfter = 10 * time.Minute
	// NamePrefix starts the name of every replica's Lease.
	NamePrefix = "paygate-apiserver-"
	// ServiceAccountNamespaceFile holds the namespace of a pod's service account.
	ServiceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
)

// Labels are the labels of every replica's Lease, and the selector the replicas count by.
func Labels() map[string]string {
	return map[string]string{"app.kubernetes.io/name": "paygate", "app.kubernetes.io/component": "apiserver"}
}

// Options configure an Announcer.
type Options struct {
	// Client creates, renews, lists and deletes Leases. It must read live (not from an informer
	// cache): the apiserver may read Leases only in its own namespace.
	Client client.Client
	// Namespace holds the Leases: the replicas' own namespace.
	Namespace string
	// Identity is written as the Lease's holderIdentity, for people (the pod's name; default
	// the host name).
	Identity string
	// Clock is the time source (default the real clock; tests pass a
	// k8s.io/utils/clock/testing fake).
	Clock clock.WithTicker
	// RenewInterval, LeaseDuration and ForgetAfter default to DefaultRenewInterval,
	// DefaultLeaseDuration and DefaultForgetAfter.
	RenewInterval time.Duration
	LeaseDuration time.Duration
	ForgetAfter   time.Duration
	// OnCount, if set, is called with the count after every successful Sync.
	OnCount func(replicas int)
	// Log receives structured logs.
	Log logr.Logger
}

// Announcer announces one replica and counts the replicas alive. Sync, Run and Release are
// called from one goroutine; Count from any.
type Announcer struct {
	opts  Options
	name  string
	lease *coordinationv1.Lease // as last written; nil before the first create and after Release
	count atomic.Int64
	// failing is whether the last Sync failed (errors are logged when it starts and ends).
	failing bool
}

// New returns an Announcer with a Lease name of its own; nothing is written before Sync or Run.
func New(opts Options) (*Announcer, error) {
	if opts.Client == nil {
		return nil, errors.New("replicas: no client")
	}
	if opts.Namespace == "" {
		return nil, errors.New("replicas: no namespace")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.RenewInterval <= 0 {
		opts.RenewInterval = DefaultRenewInterval
	}
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = DefaultLeaseDuration
	}
	if opts.LeaseDuration < opts.RenewInterval {
		return nil, fmt.Errorf("replicas: the lease duration %v is shorter than the renew interval %v", opts.LeaseDuration, opts.RenewInterval)
	}
	if opts.ForgetAfter <= 0 {
		opts.ForgetAfter = DefaultForgetAfter
	}
	if opts.Identity == "" {
		opts.Identity, _ = os.Hostname()
	}
	id := make([]byte, 5)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("replicas: drawing an id: %w", err)
	}
	a := &Announcer{opts: opts, name: NamePrefix + hex.EncodeToString(id)}
	a.count.Store(1)
	return a, nil
}

// Name is the name of this replica's Lease.
func (a *Announcer) Name() string { return a.name }

// Count is how many replicas are alive, this one included, as of the last successful Sync: 1
// before it, and for a nil Announcer.
func (a *Announcer) Count() int {
	if a == nil {
		return 1
	}
	return int(a.count.Load())
}

// Run announces this replica now and every RenewInterval until ctx ends, then deletes its Lease.
// Failures are logged; the count stays as it was until a Sync succeeds again.
func (a *Announcer) Run(ctx context.Context) error {
	_ = a.Sync(ctx)
	ticker := a.opts.Clock.NewTicker(a.opts.RenewInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			releaseCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			return a.Release(releaseCtx)
		case <-ticker.C():
			_ = a.Sync(ctx)
		}
	}
}

// Sync renews this replica's Lease (creating it the first time, or again when it was deleted)
// and counts the replicas whose Lease has not expired. On success Count reports the new count;
// on failure it keeps the last one (a replica that cannot reach Kubernetes keeps dividing the
// limit as before, stricter rather than looser). Errors are logged and returned.
func (a *Announcer) Sync(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, a.opts.RenewInterval)
	defer cancel()
	now := a.opts.Clock.Now()
	renewErr := a.renew(ctx, now)
	n, countErr := a.countAlive(ctx, now)
	if countErr == nil {
		if prev := int(a.count.Swap(int64(n))); prev != n {
			a.opts.Log.Info("Replicas sharing the rate limit changed", "replicas", n, "previous", prev, "lease", a.name)
		}
		if a.opts.OnCount != nil {
			a.opts.OnCount(n)
		}
	}
	err := errors.Join(renewErr, countErr)
	switch {
	case err != nil && !a.failing:
		a.opts.Log.Error(err, "Announcing this replica or counting the others failed; the rate limit stays divided by the last count until it works",
			"lease", a.name, "namespace", a.opts.Namespace, "replicas", a.Count())
	case err != nil:
		a.opts.Log.V(1).Info("Announcing this replica or counting the others failed again", "error", err.Error(), "lease", a.name)
	case a.failing:
		a.opts.Log.Info("Announcing this replica works again", "lease", a.name, "replicas", n)
	}
	a.failing = err != nil
	return err
}

// renew writes this replica's Lease with renewTime now.
func (a *Announcer) renew(ctx context.Context, now time.Time) error {
	renewed := metav1.NewMicroTime(now)
	if a.lease != nil {
		next := a.lease.DeepCopy()
		next.Spec.RenewTime = &renewed
		next.Spec.LeaseDurationSeconds = ptr.To(a.durationSeconds())
		err := a.opts.Client.Update(ctx, next)
		if err == nil {
			a.lease = next
			return nil
		}
		if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("renewing Lease %s/%s: %w", a.opts.Namespace, a.name, err)
		}
		// Deleted (by another replica, after this one could not renew for ForgetAfter), or
		// changed by someone else: write it afresh.
		a.lease = nil
	}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.opts.Namespace, Name: a.name, Labels: Labels()},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(a.opts.Identity),
			LeaseDurationSeconds: ptr.To(a.durationSeconds()),
			AcquireTime:          &renewed,
			RenewTime:            &renewed,
		},
	}
	err := a.opts.Client.Create(ctx, lease)
	if apierrors.IsAlreadyExists(err) {
		// An earlier create or update that looked failed went through: take the Lease over.
		existing := &coordinationv1.Lease{}
		if err := a.opts.Client.Get(ctx, client.ObjectKeyFromObject(lease), existing); err != nil {
			return fmt.Errorf("reading Lease %s/%s: %w", a.opts.Namespace, a.name, err)
		}
		existing.Labels = Labels()
		existing.Spec = lease.Spec
		lease, err = existing, a.opts.Client.Update(ctx, existing)
	}
	if err != nil {
		return fmt.Errorf("creating Lease %s/%s: %w", a.opts.Namespace, a.name, err)
	}
	a.lease = lease
	return nil
}

func (a *Announcer) durationSeconds() int32 {
	return int32((a.opts.LeaseDuration + time.Second - 1) / time.Second)
}

// countAlive lists the replicas' Leases and counts this replica and the others whose Lease has
// not expired at now. It deletes Leases expired for longer than ForgetAfter (a replica that died
// without deleting its own), only as they were read: a replica that renewed meanwhile keeps its
// Lease.
func (a *Announcer) countAlive(ctx context.Context, now time.Time) (int, error) {
	var list coordinationv1.LeaseList
	if err := a.opts.Client.List(ctx, &list, client.InNamespace(a.opts.Namespace), client.MatchingLabels(Labels())); err != nil {
		return 0, fmt.Errorf("listing the replicas' Leases in %s: %w", a.opts.Namespace, err)
	}
	alive := 1 // this replica serves, whether or not its Lease could be written
	for i := range list.Items {
		l := &list.Items[i]
		if l.Name == a.name || !strings.HasPrefix(l.Name, NamePrefix) {
			continue
		}
		expiry := a.expiry(l)
		if now.Before(expiry) {
			alive++
			continue
		}
		if now.Sub(expiry) < a.opts.ForgetAfter {
			continue
		}
		uid, rv := l.UID, l.ResourceVersion
		err := a.opts.Client.Delete(ctx, l, client.Preconditions{UID: &uid, ResourceVersion: &rv})
		switch {
		case err == nil:
			a.opts.Log.Info("Deleted the Lease of a replica gone", "lease", l.Name, "holder", ptr.Deref(l.Spec.HolderIdentity, ""),
				"expiredFor", now.Sub(expiry).Round(time.Second).String())
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		default:
			a.opts.Log.V(1).Info("Could not delete the Lease of a replica gone", "lease", l.Name, "error", err.Error())
		}
	}
	return alive, nil
}

// expiry is when l stops counting: its renewTime (else acquireTime, else its creation) plus its
// leaseDurationSeconds (else LeaseDuration).
func (a *Announcer) expiry(l *coordinationv1.Lease) time.Time {
	renewed := l.CreationTimestamp.Time
	switch {
	case l.Spec.RenewTime != nil:
		renewed = l.Spec.RenewTime.Time
	case l.Spec.AcquireTime != nil:
		renewed = l.Spec.AcquireTime.Time
	}
	d := a.opts.LeaseDuration
	if l.Spec.LeaseDurationSeconds != nil && *l.Spec.LeaseDurationSeconds > 0 {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return renewed.Add(d)
}

// Release deletes this replica's Lease, so that the others stop counting it at their next Sync.
// The count is left as it was. A later Sync announces the replica again.
func (a *Announcer) Release(ctx context.Context) error {
	var opts []client.DeleteOption
	if a.lease != nil && a.lease.UID != "" {
		opts = append(opts, client.Preconditions{UID: &a.lease.UID})
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: a.opts.Namespace, Name: a.name}}
	a.lease = nil
	if err := a.opts.Client.Delete(ctx, lease, opts...); client.IgnoreNotFound(err) != nil {
		a.opts.Log.Error(err, "Deleting this replica's Lease failed; the others count it until it expires", "lease", a.name)
		return fmt.Errorf("deleting Lease %s/%s: %w", a.opts.Namespace, a.name, err)
	}
	a.opts.Log.Info("Deleted this replica's Lease", "lease", a.name)
	return nil
}

// Namespace is the namespace this process runs in, and where it was read: $POD_NAMESPACE (the
// downward API), else the pod's service account namespace file. Outside a pod it is "".
func Namespace() (namespace, source string) {
	return namespaceFrom(os.Getenv, os.ReadFile)
}

func namespaceFrom(getenv func(string) string, readFile func(string) ([]byte, error)) (namespace, source string) {
	if ns := strings.TrimSpace(getenv("POD_NAMESPACE")); ns != "" {
		return ns, "POD_NAMESPACE"
	}
	if b, err := readFile(ServiceAccountNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns, ServiceAccountNamespaceFile
		}
	}
	return "", ""
}
