// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The merchant console's people, sessions and audit trail (docs/console.md). Nothing secret is
// in these objects: password hashes, second-factor secrets, recovery-code hashes and invitations
// live in each user's credentials Secret (ConsoleCredentialsSecretName); a session object is named
// by a hash of its cookie, never by the cookie.

// ConsoleRole is what a console user may do in their merchant's account.
// +kubebuilder:validation:Enum=owner;developer;finance;viewer
type ConsoleRole string

const (
	// ConsoleOwner sees everything, the audit trail included, and invites and removes users.
	ConsoleOwner ConsoleRole = "owner"
	// ConsoleDeveloper sees payments, webhook deliveries and the integration's settings.
	ConsoleDeveloper ConsoleRole = "developer"
	// ConsoleFinance sees payments, payouts, balances and billing; it is the role that moves
	// money (part two), so it needs a second factor.
	ConsoleFinance ConsoleRole = "finance"
	// ConsoleViewer sees payments, payouts, billing and balances, and no settings.
	ConsoleViewer ConsoleRole = "viewer"
)

// NeedsSecondFactor reports whether a role must enrol a TOTP second factor before it may use the
// console (owners and finance users: they can move money).
func (r ConsoleRole) NeedsSecondFactor() bool { return r == ConsoleOwner || r == ConsoleFinance }

// ConsoleUserName is the object name of the console user with email: "user-" and 20 hex digits of
// the SHA-256 of the lower-cased address. One name per address in a namespace; the apiserver
// also refuses to sign in an address two users share across namespaces.
func ConsoleUserName(email string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(email))))
	return "user-" + hex.EncodeToString(sum[:10])
}

// ConsoleCredentialsSecretName is the Secret that holds the password hash, TOTP secret,
// recovery-code hashes and pending invitation of console user user of namespace namespace. It
// lives in the apiserver's own namespace (the only one where it may write Secrets), not the
// merchant's.
func ConsoleCredentialsSecretName(namespace, user string) string {
	return "console-" + namespace + "." + user
}

// ConsoleSessionName is the object name of the session whose cookie has tokenID
// (consoleauth.TokenID: a hash of the cookie).
func ConsoleSessionName(tokenID string) string { return "session-" + tokenID }

// Label keys of console objects.
const (
	// LabelConsoleUser names the ConsoleUser a session or a credentials Secret belongs to.
	LabelConsoleUser = "paygate.dev/console-user"
	// LabelConsoleMerchant names the Merchant of a session or an audit record.
	LabelConsoleMerchant = "paygate.dev/console-merchant"
	// LabelConsoleNamespace names the namespace of the ConsoleUser a credentials Secret belongs to.
	LabelConsoleNamespace = "paygate.dev/console-namespace"
)

// ConsoleUserSpec is a person who signs in to one merchant's console.
type ConsoleUserSpec struct {
	// merchant is the name of the Merchant, in this namespace, the user belongs to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a console user's merchant cannot change"
	// +required
	Merchant string `json:"merchant"`

	// email the user signs in with, in lower case; the object's name is ConsoleUserName(email).
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=254
	// +kubebuilder:validation:Pattern=`^[a-z0-9._%+\-]+@[a-z0-9.\-]+\.[a-z]{2,}$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a console user's email cannot change; invite the new address"
	// +required
	Email string `json:"email"`

	// displayName is how the console and its audit trail name the user.
	// +kubebuilder:validation:MaxLength=100
	// +optional
	DisplayName string `json:"displayName,omitempty"`

	// role is what the user may do: owner, developer, finance or viewer.
	// +required
	Role ConsoleRole `json:"role"`

	// disabled users cannot sign in, and their sessions end at their next request.
	// +optional
	Disabled bool `json:"disabled,omitempty"`
}

// ConsoleUserStatus is where a console user stands.
type ConsoleUserStatus struct {
	// observedGeneration is the spec generation the status was written for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// passwordSet is true once the user accepted their invitation and chose a password.
	// +optional
	PasswordSet bool `json:"passwordSet,omitempty"`

	// twoFactorEnrolled is true once the user confirmed a TOTP second factor.
	// +optional
	TwoFactorEnrolled bool `json:"twoFactorEnrolled,omitempty"`

	// recoveryCodesLeft is how many unused recovery codes the user holds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	RecoveryCodesLeft int32 `json:"recoveryCodesLeft,omitempty"`

	// lastTOTPStep is the 30-second step of the last second-factor code accepted: a code is
	// accepted once, on every replica.
	// +optional
	LastTOTPStep int64 `json:"lastTOTPStep,omitempty"`

	// failedSignIns counts consecutive failed sign-ins; reset by a successful one.
	// +kubebuilder:validation:Minimum=0
	// +optional
	FailedSignIns int32 `json:"failedSignIns,omitempty"`

	// lockedUntil, when in the future, refuses every sign-in of the user (docs/console.md,
	// Lockout).
	// +optional
	LockedUntil *metav1.Time `json:"lockedUntil,omitempty"`

	// lastSignInTime is when the user last signed in.
	// +optional
	LastSignInTime *metav1.Time `json:"lastSignInTime,omitempty"`

	// invitationExpires is when the user's pending invitation stops working.
	// +optional
	InvitationExpires *metav1.Time `json:"invitationExpires,omitempty"`
}

// ConsoleUser is a person who signs in to a merchant's console.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cuser,categories=paygate
// +kubebuilder:printcolumn:name="Merchant",type=string,JSONPath=`.spec.merchant`
// +kubebuilder:printcolumn:name="Email",type=string,JSONPath=`.spec.email`
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.spec.role`
// +kubebuilder:printcolumn:name="2FA",type=boolean,JSONPath=`.status.twoFactorEnrolled`
// +kubebuilder:printcolumn:name="Locked-Until",type=date,JSONPath=`.status.lockedUntil`,priority=1
// +kubebuilder:printcolumn:name="Last-Sign-In",type=date,JSONPath=`.status.lastSignInTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ConsoleUser struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the user.
	// +required
	Spec ConsoleUserSpec `json:"spec"`

	// status is where the user stands.
	// +optional
	Status ConsoleUserStatus `json:"status,omitempty"`
}

// ConsoleUserList contains a list of ConsoleUser.
// +kubebuilder:object:root=true
type ConsoleUserList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ConsoleUser `json:"items"`
}

// ConsoleSignInMethod is how a session was signed in.
// +kubebuilder:validation:Enum=password;oidc
type ConsoleSignInMethod string

const (
	// ConsoleSignInPassword signed in with a password (and the second factor where needed).
	ConsoleSignInPassword ConsoleSignInMethod = "password"
	// ConsoleSignInOIDC signed in through the installation's OpenID Connect provider.
	ConsoleSignInOIDC ConsoleSignInMethod = "oidc"
)

// ConsoleSessionSpec is one signed-in browser.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a console session is immutable; sign in again"
type ConsoleSessionSpec struct {
	// user is the ConsoleUser's name, in this namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	User string `json:"user"`

	// method is how the session signed in.
	// +required
	Method ConsoleSignInMethod `json:"method"`

	// secondFactorPending sessions have passed the password only: they may enter the second
	// factor (or enrol it) and nothing else, until they expire.
	// +optional
	SecondFactorPending bool `json:"secondFactorPending,omitempty"`

	// expires is the session's absolute end, however active it is.
	// +required
	Expires metav1.Time `json:"expires"`

	// idleTimeoutSeconds ends the session when no request came for that long.
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=86400
	// +required
	IdleTimeoutSeconds int32 `json:"idleTimeoutSeconds"`

	// address is the client address that signed in.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Address string `json:"address,omitempty"`

	// userAgent is the browser that signed in, cut to 200 characters.
	// +kubebuilder:validation:MaxLength=200
	// +optional
	UserAgent string `json:"userAgent,omitempty"`
}

// ConsoleSessionStatus records the session's use.
type ConsoleSessionStatus struct {
	// lastSeen is when the session last made a request, written at most once a minute.
	// +optional
	LastSeen *metav1.Time `json:"lastSeen,omitempty"`
}

// ConsoleSession is a signed-in console browser. Its name is ConsoleSessionName of a hash of
// the session cookie; deleting it signs the browser out on every replica.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=csession,categories=paygate
// +kubebuilder:printcolumn:name="User",type=string,JSONPath=`.spec.user`
// +kubebuilder:printcolumn:name="Method",type=string,JSONPath=`.spec.method`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.address`
// +kubebuilder:printcolumn:name="Expires",type=date,JSONPath=`.spec.expires`
// +kubebuilder:printcolumn:name="Last-Seen",type=date,JSONPath=`.status.lastSeen`
type ConsoleSession struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the session.
	// +required
	Spec ConsoleSessionSpec `json:"spec"`

	// status records the session's use.
	// +optional
	Status ConsoleSessionStatus `json:"status,omitempty"`
}

// ConsoleSessionList contains a list of ConsoleSession.
// +kubebuilder:object:root=true
type ConsoleSessionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ConsoleSession `json:"items"`
}

// ConsoleAuditResult is how a console action ended.
// +kubebuilder:validation:Enum=success;refused;failed
type ConsoleAuditResult string

const (
	// ConsoleAuditSuccess: the action was done.
	ConsoleAuditSuccess ConsoleAuditResult = "success"
	// ConsoleAuditRefused: the console refused it (wrong password, no permission, locked).
	ConsoleAuditRefused ConsoleAuditResult = "refused"
	// ConsoleAuditFailed: it was allowed but did not complete.
	ConsoleAuditFailed ConsoleAuditResult = "failed"
)

// ConsoleAuditRecordSpec is one console action: who, what, when, from where, and the result.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an audit record is immutable"
type ConsoleAuditRecordSpec struct {
	// merchant is the Merchant, in this namespace, whose console the action was taken in.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Merchant string `json:"merchant"`

	// actor is the email of the user who acted (or tried to).
	// +kubebuilder:validation:MaxLength=254
	// +required
	Actor string `json:"actor"`

	// action is what was done, in the console's words (sign-in, sign-out, invite-user, ...;
	// docs/console.md lists them).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +required
	Action string `json:"action"`

	// target is what the action was taken on (a user's email, an export's filter), if anything.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Target string `json:"target,omitempty"`

	// result is how it ended.
	// +required
	Result ConsoleAuditResult `json:"result"`

	// reason says why an action was refused or failed.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Reason string `json:"reason,omitempty"`

	// address is the client address the action came from.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Address string `json:"address,omitempty"`

	// time is when the action was taken.
	// +required
	Time metav1.MicroTime `json:"time"`
}

// ConsoleAuditRecord is one entry of a merchant's console audit trail; owners see them in the
// console. Records are immutable and kept until deleted.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=caudit,categories=paygate
// +kubebuilder:printcolumn:name="Merchant",type=string,JSONPath=`.spec.merchant`
// +kubebuilder:printcolumn:name="Actor",type=string,JSONPath=`.spec.actor`
// +kubebuilder:printcolumn:name="Action",type=string,JSONPath=`.spec.action`
// +kubebuilder:printcolumn:name="Result",type=string,JSONPath=`.spec.result`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.address`,priority=1
// +kubebuilder:printcolumn:name="Time",type=date,JSONPath=`.spec.time`
type ConsoleAuditRecord struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the record.
	// +required
	Spec ConsoleAuditRecordSpec `json:"spec"`
}

// ConsoleAuditRecordList contains a list of ConsoleAuditRecord.
// +kubebuilder:object:root=true
type ConsoleAuditRecordList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ConsoleAuditRecord `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ConsoleUser{}, &ConsoleUserList{}, &ConsoleSession{}, &ConsoleSessionList{},
		&ConsoleAuditRecord{}, &ConsoleAuditRecordList{})
}
