// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/consoleauth"
)

// Keys of a console user's credentials Secret.
const (
	keyPassword      = "password"      // argon2id PHC string
	keyTOTP          = "totp"          // base32 TOTP secret, once confirmed
	keyTOTPPending   = "totpPending"   // base32 TOTP secret being enrolled
	keyRecoveryCodes = "recoveryCodes" // hex SHA-256 of each unused recovery code, one per line
	keyInvitation    = "invitation"    // "<token id> <expiry, RFC 3339>"
)

// userSecrets are a console user's secrets, read live from their Secret (never cached: a
// replica holds a password hash only while it checks it).
type userSecrets struct {
	secret *corev1.Secret
}

func (cr *userSecrets) get(k string) string { return string(cr.secret.Data[k]) }

func (cr *userSecrets) set(k, v string) {
	if v == "" {
		delete(cr.secret.Data, k)
		return
	}
	cr.secret.Data[k] = []byte(v)
}

func (cr *userSecrets) recoveryHashes() []string {
	return strings.Fields(cr.get(keyRecoveryCodes))
}

// invitationValid reports whether token is u's pending, unexpired invitation.
func (cr *userSecrets) invitationValid(token string, now time.Time) bool {
	id, expiry, ok := strings.Cut(cr.get(keyInvitation), " ")
	if !ok {
		return false
	}
	t, err := time.Parse(time.RFC3339, expiry)
	return err == nil && now.Before(t) && subtle.ConstantTimeCompare([]byte(id), []byte(consoleauth.TokenID(token))) == 1
}

// readCredentials reads u's credentials live from secretsNS (the apiserver's namespace); a user
// without a Secret yet has empty ones.
func readCredentials(ctx context.Context, r client.Reader, secretsNS string, u *paygatev1.ConsoleUser) (*userSecrets, error) {
	s := &corev1.Secret{}
	key := client.ObjectKey{Namespace: secretsNS, Name: paygatev1.ConsoleCredentialsSecretName(u.Namespace, u.Name)}
	err := r.Get(ctx, key, s)
	if apierrors.IsNotFound(err) {
		return &userSecrets{secret: &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
				Labels: map[string]string{paygatev1.LabelConsoleUser: u.Name, paygatev1.LabelConsoleNamespace: u.Namespace}},
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{}}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading a console user's credentials: %w", err)
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	return &userSecrets{secret: s}, nil
}

// writeCredentials creates or updates the Secret under the resourceVersion it was read at: two
// replicas changing one user's credentials at once cannot both win.
func writeCredentials(ctx context.Context, w client.Writer, cr *userSecrets) error {
	var err error
	if cr.secret.ResourceVersion == "" {
		err = w.Create(ctx, cr.secret)
	} else {
		err = w.Update(ctx, cr.secret)
	}
	if err != nil {
		return fmt.Errorf("writing a console user's credentials: %w", err)
	}
	return nil
}

// createOrGetUser creates m's console user with email (lower case) and role, or reads the one
// that exists (whose role stays as it is).
func createOrGetUser(ctx context.Context, cl client.Client, m *paygatev1.Merchant, email string, role paygatev1.ConsoleRole,
	displayName string) (*paygatev1.ConsoleUser, error) {
	u := &paygatev1.ConsoleUser{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: paygatev1.ConsoleUserName(email)},
		Spec: paygatev1.ConsoleUserSpec{Merchant: m.Name, Email: email, Role: role, DisplayName: displayName}}
	if err := cl.Create(ctx, u); apierrors.IsAlreadyExists(err) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return nil, fmt.Errorf("reading the console user: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("creating the console user: %w", err)
	}
	return u, nil
}

// Invitation is what Invite made: the user and the one-time link that lets them choose a
// password.
type Invitation struct {
	User *paygatev1.ConsoleUser
	Link string
}

// deleteCredentials deletes u's credentials Secret (a removed user's).
func deleteCredentials(ctx context.Context, w client.Writer, secretsNS string, u *paygatev1.ConsoleUser) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretsNS, Name: paygatev1.ConsoleCredentialsSecretName(u.Namespace, u.Name)}}
	if err := w.Delete(ctx, s); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting a console user's credentials: %w", err)
	}
	return nil
}

// Invite creates (or finds) the console user with email in merchant m's namespace and gives
// them a new invitation, replacing any earlier one: the link, valid for lifetime, lets them
// choose a password. publicURL is where browsers reach the apiserver; secretsNS is the
// apiserver's namespace, where the credentials Secret is kept. It refuses an email another
// merchant's user already has.
func Invite(ctx context.Context, cl client.Client, secretsNS string, m *paygatev1.Merchant, email string, role paygatev1.ConsoleRole,
	displayName, publicURL string, lifetime time.Duration, now time.Time) (*Invitation, error) {
	email = normalEmail(email)
	var all paygatev1.ConsoleUserList
	if err := cl.List(ctx, &all); err != nil {
		return nil, fmt.Errorf("listing console users: %w", err)
	}
	for _, other := range all.Items {
		if normalEmail(other.Spec.Email) == email && (other.Namespace != m.Namespace || other.Spec.Merchant != m.Name) {
			return nil, fmt.Errorf("%s is already a console user of merchant %s/%s", email, other.Namespace, other.Spec.Merchant)
		}
	}
	u, err := createOrGetUser(ctx, cl, m, email, role, displayName)
	if err != nil {
		return nil, err
	}
	token, id, err := consoleauth.NewToken()
	if err != nil {
		return nil, fmt.Errorf("making an invitation: %w", err)
	}
	cr, err := readCredentials(ctx, cl, secretsNS, u)
	if err != nil {
		return nil, err
	}
	expires := now.Add(lifetime).UTC().Truncate(time.Second)
	cr.set(keyInvitation, id+" "+expires.Format(time.RFC3339))
	if err := writeCredentials(ctx, cl, cr); err != nil {
		return nil, err
	}
	patch := client.MergeFrom(u.DeepCopy())
	u.Status.InvitationExpires = &metav1.Time{Time: expires}
	if err := cl.Status().Patch(ctx, u, patch); err != nil {
		return nil, fmt.Errorf("recording the invitation: %w", err)
	}
	q := url.Values{"user": {u.Namespace + "/" + u.Name}, "token": {token}}
	return &Invitation{User: u, Link: strings.TrimRight(publicURL, "/") + Prefix + "/invite?" + q.Encode()}, nil
}
