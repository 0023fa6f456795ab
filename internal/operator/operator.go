// Package operator wires Paygate's controllers into a manager. `paygate manager`, `paygate dev`
// and the integration tests build their managers from it, so that tests run the manager
// production runs.
package operator

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/paygate/paygate/controllers"
	"github.com/paygate/paygate/internal/index"
)

// SetupIndexes registers the cache field indexes.
func SetupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	if err := index.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("setting up field indexes: %w", err)
	}
	return nil
}

// SetupReconcilers registers every reconciler.
func SetupReconcilers(mgr ctrl.Manager, opts controllers.Options) error {
	return controllers.SetupReconcilers(mgr, opts)
}
