// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package load

import (
	"encoding/json"
	"fmt"
	"os"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/pkg/paygate"
)

// Config is what the driver tells the load tool about the running stack (a JSON file).
type Config struct {
	// Kubeconfig reaches the Kubernetes API as the servers do.
	Kubeconfig string `json:"kubeconfig"`
	// EtcdURL is etcd's client URL (the seed's fast path writes there).
	EtcdURL string `json:"etcd_url"`
	// APIURL is the paygate apiserver's base URL.
	APIURL string `json:"api_url"`
	// Merchants by role: shop (creates, payouts, subscriptions, end to end), bulk (the seeded
	// merchant: reads, list, balance), store (the storage row).
	Merchants map[string]Merchant `json:"merchants"`
	// Hosted is a hosted Payment as the apiserver wrote it for a create request like the load
	// tool's (metadata: namespace and labels only): raw creates copy it.
	Hosted *paygatev1.Payment `json:"hosted"`
	// Settled is a push Payment that the manager settled (spec and status): seeded payments copy
	// it.
	Settled *paygatev1.Payment `json:"settled"`
	// ReadIDs are trx_ids of the bulk merchant the read scenarios read.
	ReadIDs []string `json:"read_ids"`
	// PlanCode and PlanTerms are the shop's billing plan and the terms subscriptions show.
	PlanCode  string `json:"plan_code"`
	PlanTerms string `json:"plan_terms"`
	// Phone succeeds in the sandbox.
	Phone string `json:"phone"`
	// ConsoleEmail and ConsolePassword sign a viewer of the bulk merchant in to the console (the
	// console-list scenario).
	ConsoleEmail    string `json:"console_email"`
	ConsolePassword string `json:"console_password"`
}

// Merchant is one merchant of the run, in the sandbox environment.
type Merchant struct {
	Name          string              `json:"name"`
	Namespace     string              `json:"namespace"`
	UID           string              `json:"uid"`
	Credentials   paygate.Credentials `json:"credentials"`
	WebhookSecret []byte              `json:"webhook_secret"`
}

// ReadConfig reads a Config file.
func ReadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := &Config{}
	if err := json.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// WriteConfig writes c to path (mode 0600: it holds credentials).
func WriteConfig(path string, c *Config) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
