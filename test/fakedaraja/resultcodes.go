// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package fakedaraja

import "encoding/json"

// ResultCode is a Daraja ResultCode. Most are numbers ("0", "1032"), some are not ("R000002",
// "SFC_IC0003"); it is encoded as a JSON number when it is all digits, as the documented
// callbacks do, else as a string.
type ResultCode string

// Documented result codes.
const (
	// ResultSuccess: "The service request is processed successfully."
	ResultSuccess ResultCode = "0"
	// ResultInsufficientFunds: "The balance is insufficient for the transaction." (STK: the
	// customer's; B2C and reversal: the organisation's).
	ResultInsufficientFunds ResultCode = "1"
	// ResultBelowMinimum: "Declined due to limit rule" (amount below the minimum).
	ResultBelowMinimum ResultCode = "2"
	// ResultAboveMaximum: "Declined due to limit rule: greater than the maximum transaction
	// amount."
	ResultAboveMaximum ResultCode = "3"
	// ResultExpired: "Transaction has expired" (STK).
	ResultExpired ResultCode = "1019"
	// ResultCancelledByUser: "Request cancelled by user" (STK).
	ResultCancelledByUser ResultCode = "1032"
	// ResultUnreachable: "DS timeout user cannot be reached" (STK).
	ResultUnreachable ResultCode = "1037"
	// ResultWrongPIN is 2001, "The initiator information is invalid.": for STK the customer
	// entered a wrong PIN; for B2C, reversal and the queries the API user's credentials are wrong.
	ResultWrongPIN ResultCode = "2001"
	// ResultInitiatorInvalid is the same code as ResultWrongPIN, named for the B2C meaning.
	ResultInitiatorInvalid ResultCode = "2001"
	// ResultUnregisteredCustomer: "Credit Party customer type (Unregistered or Registered
	// Customer) can't be supported by the service." (B2C).
	ResultUnregisteredCustomer ResultCode = "2040"
	// ResultOperatorDoesNotExist: "The operator does not exist." (B2C: the phone number is not on
	// M-PESA).
	ResultOperatorDoesNotExist ResultCode = "SFC_IC0003"
	// ResultAlreadyReversed: "The transaction has already been reversed" (Reversal).
	ResultAlreadyReversed ResultCode = "R000001"
	// ResultInvalidOriginalTransaction: "The OriginalTransactionID is invalid." (Reversal).
	ResultInvalidOriginalTransaction ResultCode = "R000002"
)

// resultDescs are the documented ResultDesc texts: the result code tables and sample callbacks of
// https://developer.safaricom.co.ke/apis/MpesaExpressSimulate,
// https://developer.safaricom.co.ke/apis/BusinessToCustomer and
// https://developer.safaricom.co.ke/apis/Reversal. Where a sample callback and the table differ,
// the sample (what is on the wire) wins, e.g. "Request cancelled by user" without a full stop.
var resultDescs = map[ResultCode]string{
	ResultSuccess:                    "The service request is processed successfully.",
	ResultInsufficientFunds:          "The balance is insufficient for the transaction.",
	ResultBelowMinimum:               "Declined due to limit rule",
	ResultAboveMaximum:               "Declined due to limit rule: greater than the maximum transaction amount.",
	"4":                              "Declined due to limit rule: would exceed daily transfer limit",
	"8":                              "Declined due to limit rule: would exceed the maximum balance.",
	"11":                             "The DebitParty is in an invalid state.",
	"17":                             "Rule limited.",
	"21":                             "The initiator is not allowed to initiate this request",
	ResultExpired:                    "Transaction has expired",
	"1025":                           "An error occurred while sending a push request.",
	ResultCancelledByUser:            "Request cancelled by user",
	ResultUnreachable:                "DS timeout user cannot be reached",
	ResultWrongPIN:                   "The initiator information is invalid.",
	"2006":                           "Declined due to account rule: The account status does not allow this transaction.",
	"2028":                           "The request is not permitted according to product assignment.",
	ResultUnregisteredCustomer:       "Credit Party customer type (Unregistered or Registered Customer) can't be supported by the service.",
	"8006":                           "The security credential is locked.",
	ResultOperatorDoesNotExist:       "The operator does not exist.",
	ResultAlreadyReversed:            "The transaction has already been reversed",
	ResultInvalidOriginalTransaction: "The OriginalTransactionID is invalid.",
}

func describe(code ResultCode, desc string) string {
	if desc != "" {
		return desc
	}
	if d, ok := resultDescs[code]; ok {
		return d
	}
	return "The service request has failed."
}

func (c ResultCode) orSuccess() ResultCode {
	if c == "" {
		return ResultSuccess
	}
	return c
}

func (c ResultCode) numeric() bool {
	if c == "" {
		return false
	}
	for _, r := range c {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// MarshalJSON encodes an all-digit code as a JSON number, any other as a string.
func (c ResultCode) MarshalJSON() ([]byte, error) {
	if c.numeric() {
		return []byte(c), nil
	}
	return json.Marshal(string(c))
}

// UnmarshalJSON accepts a JSON number or string.
func (c *ResultCode) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = ResultCode(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*c = ResultCode(n.String())
	return nil
}
