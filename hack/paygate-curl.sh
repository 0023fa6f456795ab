#!/usr/bin/env bash
# Calls the Paygate merchant API with a signed request, using the credentials that
# `make run` writes (. .paygate/dev/credentials.env). Needs curl and openssl.
#
#   hack/paygate-curl.sh METHOD PATH_WITH_QUERY [JSON_BODY] [extra curl args...]
#   hack/paygate-curl.sh POST /api/v1/payments '{"payment_amount":1500,"currency_code":"TZS","ref_trx":"order-1"}'
#   hack/paygate-curl.sh GET '/api/v1/payments?status=pending'
#   hack/paygate-curl.sh POST /api/v1/payouts/preview '{"amount":5000}'
#   hack/paygate-curl.sh POST /api/v1/payouts '{"amount":5000}' -H 'Idempotency-Key: payout-1'
#   hack/paygate-curl.sh GET /api/v1/payouts/<payout id>
set -euo pipefail
: "${PAYGATE_BASE_URL:?source .paygate/dev/credentials.env first}"
: "${PAYGATE_ENVIRONMENT:?}" "${PAYGATE_MERCHANT_KEY:?}" "${PAYGATE_API_KEY:?}" "${PAYGATE_API_SECRET:?}"
method=${1:?method}; path=${2:?path with query}; body=${3:-}
shift $(( $# < 3 ? $# : 3 ))
ts=$(date +%s)
# Signed payload: <timestamp>.<METHOD>.<path_with_query>.<raw_body>
sig=$(printf '%s.%s.%s.%s' "$ts" "${method^^}" "$path" "$body" \
  | openssl dgst -sha256 -hmac "$PAYGATE_API_SECRET" -hex | sed 's/^.*= //')
args=(-sS -X "${method^^}" "$PAYGATE_BASE_URL$path"
  -H "X-Environment: $PAYGATE_ENVIRONMENT" -H "X-Merchant-Key: $PAYGATE_MERCHANT_KEY"
  -H "X-API-Key: $PAYGATE_API_KEY" -H "X-Timestamp: $ts" -H "X-Signature: sha256=$sig"
  -H "Accept: application/json")
if [ -n "$body" ]; then args+=(-H "Content-Type: application/json" --data-binary "$body"); fi
exec curl "${args[@]}" "$@"
