// Package operator holds what every process that runs Paygate's controllers shares: the scheme
// and the cache configuration. `paygate manager`, `paygate dev` and the integration tests build
// their managers from it, so that tests run the manager production runs.
package operator

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/controllers"
	"github.com/paygate/paygate/internal/index"
)

// Scheme knows the built-in kinds and Paygate's.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(fmt.Sprintf("registering built-in kinds: %v", err))
	}
	if err := paygatev1.AddToScheme(s); err != nil {
		panic(fmt.Sprintf("registering paygate.dev kinds: %v", err))
	}
	return s
}

// CacheOptions keep only the Secrets Paygate issues in the cache, not every Secret of the cluster.
func CacheOptions() cache.Options {
	issued, err := labels.NewRequirement(paygatev1.LabelCredential, selection.Exists, nil)
	if err != nil {
		panic(fmt.Sprintf("building the Secret selector: %v", err))
	}
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Label: labels.NewSelector().Add(*issued)},
	}}
}

// SetupIndexes registers the cache field indexes.
func SetupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	if err := index.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("setting up field indexes: %w", err)
	}
	return nil
}

// SetupReconcilers registers every reconciler.
func SetupReconcilers(mgr ctrl.Manager) error {
	return controllers.SetupReconcilers(mgr)
}
