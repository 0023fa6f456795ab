// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/consoleauth"
)

// DemoUser is a console user made ready to sign in without an invitation, for `paygate dev` and the
// benchmark: an email, a fresh password and, when the role needs one, an enrolled TOTP secret.
type DemoUser struct {
	Email, Password, TOTPSecret string
}

// EnsureDemoUser makes email a user of m's console with role, signed up, with a new random password
// and (owners and finance users) a new TOTP secret, replacing any earlier ones: the local
// development environment writes them out at each start. Not for production accounts.
func EnsureDemoUser(ctx context.Context, cl client.Client, secretsNS string, m *paygatev1.Merchant, email string, role paygatev1.ConsoleRole) (*DemoUser, error) {
	email = normalEmail(email)
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secretsNS}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating the namespace of the console's secrets: %w", err)
	}
	u, err := createOrGetUser(ctx, cl, m, email, role, "Demo "+string(role))
	if err != nil {
		return nil, err
	}
	token, _, err := consoleauth.NewToken()
	if err != nil {
		return nil, err
	}
	owner := &DemoUser{Email: email, Password: "demo-" + token[:20]}
	if role.NeedsSecondFactor() {
		if owner.TOTPSecret, err = consoleauth.NewTOTPSecret(); err != nil {
			return nil, err
		}
	}
	hash, err := consoleauth.HashPassword(owner.Password)
	if err != nil {
		return nil, err
	}
	cr, err := readCredentials(ctx, cl, secretsNS, u)
	if err != nil {
		return nil, err
	}
	cr.set(keyPassword, hash)
	cr.set(keyTOTP, owner.TOTPSecret)
	cr.set(keyTOTPPending, "")
	cr.set(keyInvitation, "")
	cr.set(keyRecoveryCodes, "")
	if err := writeCredentials(ctx, cl, cr); err != nil {
		return nil, err
	}
	patch := client.MergeFrom(u.DeepCopy())
	u.Status = paygatev1.ConsoleUserStatus{ObservedGeneration: u.Generation, PasswordSet: true, TwoFactorEnrolled: owner.TOTPSecret != ""}
	if err := cl.Status().Patch(ctx, u, patch); err != nil {
		return nil, fmt.Errorf("recording the demo user: %w", err)
	}
	return owner, nil
}
