package controllers

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
)

// SetupReconcilers registers every Paygate reconciler with the manager. The manager's field
// indexes (internal/index) must be set up first.
func SetupReconcilers(mgr ctrl.Manager) error {
	ids := &IDAllocator{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}
	if err := (&GatewayReconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("gateway-controller"), IDs: ids,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the gateway controller: %w", err)
	}
	if err := (&MerchantReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(merchantControllerName), IDs: ids,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the merchant controller: %w", err)
	}
	return nil
}
