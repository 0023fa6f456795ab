// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package fakedaraja

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/subtle"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"sync"
	"time"
)

// The SecurityCredential of B2C, Transaction Status, Reversal and Account Balance is the
// initiator's password encrypted with the public key of Safaricom's certificate: "Public Key
// Certificate: This certificate is used to encrypt the Initiator's plaintext password for use in
// API calls" (https://developer.safaricom.co.ke/apis/BusinessToCustomer, prerequisites), with RSA
// PKCS#1 v1.5 padding, base64-encoded. The fake cannot hold Safaricom's private key, so it makes
// its own key pair and a self-signed certificate, FOR TESTS ONLY: configure the adapter with
// CertificatePEM instead of Safaricom's SandboxCertificate.cer.

type credentialKey struct {
	key     *rsa.PrivateKey
	cert    *x509.Certificate
	certPEM []byte
}

var (
	credOnce sync.Once
	credKey  *credentialKey
	credErr  error
)

// testCredentialKey makes the key pair and certificate once per test binary (2048-bit RSA keys are
// slow to generate) and shares them between fakes.
func testCredentialKey() (*credentialKey, error) {
	credOnce.Do(func() {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			credErr = err
			return
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(1),
			Subject:      pkix.Name{CommonName: "fakedaraja test-only M-Pesa API certificate", Organization: []string{"Paygate tests"}},
			NotBefore:    time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC),
			NotAfter:     time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
			KeyUsage:     x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			credErr = err
			return
		}
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			credErr = err
			return
		}
		credKey = &credentialKey{key: key, cert: cert, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	})
	return credKey, credErr
}

// CertificatePEM is the fake's test-only certificate (PEM), whose public key the adapter must use
// to encrypt the initiator password into SecurityCredential.
func (s *Server) CertificatePEM() []byte { return append([]byte(nil), s.cred.certPEM...) }

// Certificate is the parsed CertificatePEM.
func (s *Server) Certificate() *x509.Certificate { return s.cred.cert }

// SecurityCredential encrypts password as Daraja expects a SecurityCredential: RSA PKCS#1 v1.5
// with the certificate's public key, base64 (standard encoding). It is for tests of the fake;
// the adapter under test must do this itself.
func (s *Server) SecurityCredential(password string) string {
	ct, err := rsa.EncryptPKCS1v15(rand.Reader, &s.cred.key.PublicKey, []byte(password))
	if err != nil {
		s.t.Fatalf("fakedaraja: encrypting a credential: %v", err)
	}
	return base64.StdEncoding.EncodeToString(ct)
}

// DecryptSecurityCredential is what the fake reads from a SecurityCredential: the plaintext
// initiator password, or an error if it is not base64 or not decryptable with the fake's key.
func (s *Server) DecryptSecurityCredential(credential string) (string, error) {
	ct, err := base64.StdEncoding.DecodeString(credential)
	if err != nil {
		return "", fmt.Errorf("SecurityCredential is not base64: %w", err)
	}
	pt, err := rsa.DecryptPKCS1v15(nil, s.cred.key, ct)
	if err != nil {
		return "", fmt.Errorf("SecurityCredential does not decrypt with the fake's key: %w", err)
	}
	return string(pt), nil
}

// initiatorValid: the initiator name is the fake's and the credential decrypts to its password.
// When not, M-PESA answers result 2001 "The initiator information is invalid." ("Wrong API user
// username. Wrong API user password encrypted. Wrong algorithm or certificate used for API user
// password encryption.", BusinessToCustomer result codes).
func (s *Server) initiatorValid(name, credential string) bool {
	pw, err := s.DecryptSecurityCredential(credential)
	if err != nil {
		return false
	}
	okName := subtle.ConstantTimeCompare([]byte(name), []byte(s.opts.InitiatorName)) == 1
	okPW := subtle.ConstantTimeCompare([]byte(pw), []byte(s.opts.InitiatorPassword)) == 1
	return okName && okPW
}
