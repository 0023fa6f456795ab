// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package fakepawapay

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Callback signatures, as pawaPay describes signed callbacks
// (https://docs.pawapay.io/v2/docs/signatures, https://docs.pawapay.io/v2/api-reference/deposits/deposit-callback):
// RFC 9421 HTTP message signatures with a Content-Digest of the body (RFC 9530), a custom
// Signature-Date header, an ECDSA P-256 key whose public half is served by
// GET /v2/public-key/http (https://docs.pawapay.io/v2/api-reference/toolkit/public-keys, key id
// "HTTP_EC_P256_KEY:1" in the documentation's example).
//
// The exact component list and signature encoding pawaPay uses for callbacks are not spelled out
// in the pages read; the fake follows pawaPay's own signatures example (github.com/pawaPay/
// signatures-node-example): label "sig-pp", components "@method" "@authority" "@path"
// "signature-date" "content-digest" "content-type" "content-length", alg "ecdsa-p256-sha256",
// SHA-512 Content-Digest, and an ASN.1 DER encoded ECDSA signature (what that example's
// crypto.createSign produces; RFC 9421 itself specifies a raw r||s for this algorithm).

// CallbackKeyID is the key id the fake signs callbacks with (the documentation's example id).
const CallbackKeyID = "HTTP_EC_P256_KEY:1"

const (
	signatureLabel = "sig-pp"
	signatureAlg   = "ecdsa-p256-sha256"
)

var signedComponents = []string{"@method", "@authority", "@path", "signature-date", "content-digest", "content-type", "content-length"}

// contentDigest is an RFC 9530 Content-Digest header value for body.
func contentDigest(body []byte) string {
	sum := sha512.Sum512(body)
	return "sha-512=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
}

// signCallback sets Content-Digest, Signature-Date, Signature-Input and Signature on req.
func signCallback(req *http.Request, body []byte, key *ecdsa.PrivateKey, now time.Time) error {
	req.Header.Set("Content-Digest", contentDigest(body))
	req.Header.Set("Signature-Date", now.UTC().Format(time.RFC3339))
	req.Header.Set("Content-Length", strconv.Itoa(len(body)))
	quoted := make([]string, len(signedComponents))
	for i, c := range signedComponents {
		quoted[i] = strconv.Quote(c)
	}
	params := fmt.Sprintf("(%s);alg=%q;keyid=%q;created=%d", strings.Join(quoted, " "), signatureAlg, CallbackKeyID, now.Unix())
	base, err := signatureBase(req.Method, req.URL, req.Header, signedComponents, params)
	if err != nil {
		return err
	}
	digest := sha256.Sum256([]byte(base))
	sig, err := ecdsa.SignASN1(rand.Reader, key, digest[:])
	if err != nil {
		return err
	}
	req.Header.Set("Signature-Input", signatureLabel+"="+params)
	req.Header.Set("Signature", signatureLabel+"=:"+base64.StdEncoding.EncodeToString(sig)+":")
	return nil
}

// signatureBase builds the RFC 9421 section 2.5 signature base.
func signatureBase(method string, u *url.URL, h http.Header, components []string, params string) (string, error) {
	var b strings.Builder
	for _, c := range components {
		var v string
		switch c {
		case "@method":
			v = strings.ToUpper(method)
		case "@authority":
			v = strings.ToLower(u.Host)
		case "@path":
			v = u.EscapedPath()
			if v == "" {
				v = "/"
			}
		default:
			vals := h.Values(c)
			if len(vals) == 0 {
				return "", fmt.Errorf("covered header %q missing", c)
			}
			v = strings.TrimSpace(strings.Join(vals, ", "))
		}
		fmt.Fprintf(&b, "%q: %s\n", c, v)
	}
	fmt.Fprintf(&b, "%q: %s", "@signature-params", params)
	return b.String(), nil
}

// VerifyCallback checks a callback the fake (or pawaPay, if it signs as described above) sent:
// the Content-Digest against body, and the "sig-pp" signature over the components its
// Signature-Input lists, with pub. r is the request as the callback receiver got it (r.Host is the
// authority); body is its raw body.
func VerifyCallback(r *http.Request, body []byte, pub *ecdsa.PublicKey) error {
	if got, want := r.Header.Get("Content-Digest"), contentDigest(body); got != want {
		return fmt.Errorf("content-digest %q does not match the body (%q)", got, want)
	}
	input, ok := strings.CutPrefix(r.Header.Get("Signature-Input"), signatureLabel+"=")
	if !ok {
		return errors.New("no sig-pp in Signature-Input")
	}
	sigField, ok := strings.CutPrefix(r.Header.Get("Signature"), signatureLabel+"=:")
	if !ok || !strings.HasSuffix(sigField, ":") {
		return errors.New("no sig-pp in Signature")
	}
	sig, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(sigField, ":"))
	if err != nil {
		return fmt.Errorf("signature: %v", err)
	}
	open, close := strings.IndexByte(input, '('), strings.IndexByte(input, ')')
	if open != 0 || close < 0 {
		return fmt.Errorf("malformed Signature-Input %q", input)
	}
	var components []string
	for _, f := range strings.Fields(input[1:close]) {
		c, err := strconv.Unquote(f)
		if err != nil {
			return fmt.Errorf("malformed component %s", f)
		}
		components = append(components, c)
	}
	if !strings.Contains(input[close:], `alg="`+signatureAlg+`"`) {
		return fmt.Errorf("unexpected alg in %q", input)
	}
	u := &url.URL{Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath}
	base, err := signatureBase(r.Method, u, r.Header, components, input)
	if err != nil {
		return err
	}
	digest := sha256.Sum256([]byte(base))
	if !ecdsa.VerifyASN1(pub, digest[:], sig) {
		return errors.New("signature does not verify")
	}
	return nil
}

// publicKeyPEM encodes pub as a PEM "PUBLIC KEY" block, the format of GET /v2/public-key/http.
func publicKeyPEM(pub *ecdsa.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), nil
}
