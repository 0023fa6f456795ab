// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package fakedaraja

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// The asynchronous APIs (B2C, Transaction Status, Reversal, Account Balance) answer a request
// with an acknowledgement {OriginatorConversationID, ConversationID, ResponseCode "0",
// ResponseDescription} and POST the outcome later, {"Result": {...}}, to the request's ResultURL
// (https://developer.safaricom.co.ke/apis/BusinessToCustomer, .../TransactionStatus,
// .../Reversal, .../AccountBalance: "Response Body" and "Callback payload").

type resultEnvelope struct {
	Result resultBody `json:"Result"`
}

type resultBody struct {
	ResultType               any
	ResultCode               any
	ResultDesc               string
	OriginatorConversationID string
	ConversationID           string
	TransactionID            string
	ResultParameters         *resultParameters `json:",omitempty"`
	ReferenceData            *referenceData    `json:",omitempty"`
}

type resultParameters struct {
	ResultParameter []keyValue
}

type keyValue struct {
	Key   string
	Value any `json:",omitempty"`
}

type referenceData struct {
	ReferenceItem keyValue
}

func ack(ocid, convID, desc string) answer {
	return answer{status: http.StatusOK, body: map[string]string{
		"OriginatorConversationID": ocid,
		"ConversationID":           convID,
		"ResponseCode":             "0",
		"ResponseDescription":      desc,
	}}
}

// queueTimeoutBody is what the fake sends to a QueueTimeOutURL. Safaricom documents the URL
// ("URL for notification if the payment request times out while awaiting processing",
// BusinessToCustomer) but not the body; the fake uses the Result envelope with ResultType 1 (the
// documented "1: waiting for further messages") and ResultCode 1 "The service request timed out.",
// a shape seen in third-party SDKs. Tell a time-out by the URL it arrives at, not by its code.
func queueTimeoutBody(ocid, convID string) resultEnvelope {
	return resultEnvelope{Result: resultBody{
		ResultType:               1,
		ResultCode:               ResultCode("1"),
		ResultDesc:               "The service request timed out.",
		OriginatorConversationID: ocid,
		ConversationID:           convID,
		TransactionID:            "",
	}}
}

func (s *Server) sendResultLocked(sc ResultScript, resultURL, timeoutURL string, result, timeout any) {
	if sc.QueueTimeout {
		s.goDeliverLocked(timeoutURL, timeout, sc.CallbackDelay, sc.Delivery.copies())
		return
	}
	s.goDeliverLocked(resultURL, result, sc.CallbackDelay, sc.Delivery.copies())
}

func (s *Server) internalURL(base, api string) string {
	// The documented results carry Safaricom's own queue URL, e.g.
	// "https://internalsandbox.safaricom.co.ke/mpesa/b2cresults/v1/submit"; the fake names itself.
	return base + "/mpesa/" + api + "/v1/submit"
}

func cents(c int64) string {
	sign := ""
	if c < 0 {
		sign, c = "-", -c
	}
	return fmt.Sprintf("%s%d.%02d", sign, c/100, c%100)
}

func (s *Server) orgName() string { return s.opts.ShortCode + " - Fake Daraja" }

func customerName(phone string) string { return phone + " - FAKE CUSTOMER" }

// ---- B2C ----

// B2CPayment is one B2C payment request the fake accepted.
type B2CPayment struct {
	OriginatorConversationID string
	ConversationID           string
	InitiatorName            string
	CommandID                string
	Amount                   int64 // whole shillings
	PartyA                   string
	PartyB                   string
	Remarks                  string
	Occasion                 string
	QueueTimeOutURL          string
	ResultURL                string
	// Received is when it was accepted, by the fake's Clock.
	Received time.Time
	// Result is the ResultCode sent (or to be sent) to ResultURL; "" for a queue time-out.
	Result ResultCode
	// TransactionID is the M-PESA TransactionID of the result.
	TransactionID string
	// QueueTimedOut: a time-out notice went to QueueTimeOutURL instead of a result.
	QueueTimedOut bool
}

type b2cTxn struct{ p B2CPayment }

// b2c limits: "Minimum: Ksh 10; Maximum per transaction: Ksh 250,000" (BusinessToCustomer FAQ 9).
const (
	b2cMinAmount = 10
	b2cMaxAmount = 250_000
)

func (s *Server) b2cV3(m map[string]json.RawMessage, base string) answer {
	return s.b2cRequest(m, base, true)
}
func (s *Server) b2cV1(m map[string]json.RawMessage, base string) answer {
	return s.b2cRequest(m, base, false)
}

// b2cRequest follows https://developer.safaricom.co.ke/apis/BusinessToCustomer: the v3 request
// (OriginatorConversationID, InitiatorName, SecurityCredential, CommandID SalaryPayment /
// BusinessPayment / PromotionPayment, Amount, PartyA, PartyB 2547XXXXXXXX, Remarks of 2-100
// characters, QueueTimeOutURL, ResultURL, optional Occassion — the page's spelling; Occasion is
// accepted too), the acknowledgement, and the Result with its ResultParameters. On the older v1
// path OriginatorConversationID is optional and generated when absent.
func (s *Server) b2cRequest(m map[string]json.RawMessage, base string, v3 bool) answer {
	ocid, _ := field(m, "OriginatorConversationID")
	if v3 && ocid == "" {
		return s.badRequest("OriginatorConversationID")
	}
	initiator, _ := field(m, "InitiatorName")
	if initiator == "" {
		return s.badRequest("InitiatorName")
	}
	credential, _ := field(m, "SecurityCredential")
	if credential == "" {
		return s.badRequest("SecurityCredential")
	}
	command, _ := field(m, "CommandID")
	if command != "BusinessPayment" && command != "SalaryPayment" && command != "PromotionPayment" {
		return s.badRequest("CommandID")
	}
	amountText, _ := field(m, "Amount")
	amount, ok := wholeAmount(amountText)
	if !ok {
		return s.badRequest("Amount")
	}
	partyA, _ := field(m, "PartyA")
	if !digits(partyA, 5, 7) {
		return s.badRequest("PartyA")
	}
	partyB, _ := field(m, "PartyB")
	if !msisdn(partyB) {
		return s.badRequest("PartyB")
	}
	remarks, _ := field(m, "Remarks")
	if n := len([]rune(remarks)); n < 2 || n > 100 {
		return s.badRequest("Remarks")
	}
	timeoutURL, _ := field(m, "QueueTimeOutURL")
	if !absoluteURL(timeoutURL) {
		return s.badRequest("QueueTimeOutURL")
	}
	resultURL, _ := field(m, "ResultURL")
	if !absoluteURL(resultURL) {
		return s.badRequest("ResultURL")
	}
	occasion, _ := field(m, "Occassion", "Occasion")
	if len([]rune(occasion)) > 100 {
		return s.badRequest("Occassion")
	}

	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if ocid != "" && s.opts.RejectDuplicateOriginatorConversationID && s.b2cByOCID[ocid] > 0 {
		s.b2cByOCID[ocid]++
		return s.errorAnswer(http.StatusInternalServerError, "500.002.1001", "Duplicate OriginatorConversationID.")
	}
	seq := s.nextSeq()
	if ocid == "" {
		ocid = fmt.Sprintf("%s-%s-%s-%s%d", randomHex(4), randomHex(4), randomHex(4), randomHex(12), seq)
	}
	s.b2cByOCID[ocid]++
	x := &b2cTxn{p: B2CPayment{
		OriginatorConversationID: ocid,
		ConversationID:           conversationID(now, seq),
		InitiatorName:            initiator,
		CommandID:                command,
		Amount:                   amount,
		PartyA:                   partyA,
		PartyB:                   partyB,
		Remarks:                  remarks,
		Occasion:                 occasion,
		QueueTimeOutURL:          timeoutURL,
		ResultURL:                resultURL,
		Received:                 now,
		TransactionID:            receipt(seq),
	}}
	s.b2cTxns = append(s.b2cTxns, x)
	sc := s.b2cScripts[partyB]

	body := resultBody{
		ResultType:               0,
		OriginatorConversationID: ocid,
		ConversationID:           x.p.ConversationID,
		TransactionID:            x.p.TransactionID,
		ReferenceData:            &referenceData{ReferenceItem: keyValue{Key: "QueueTimeoutURL", Value: s.internalURL(base, "b2cresults")}},
	}
	if sc.QueueTimeout {
		x.p.QueueTimedOut = true
		s.sendResultLocked(sc, resultURL, timeoutURL, nil, queueTimeoutBody(ocid, x.p.ConversationID))
		return ack(ocid, x.p.ConversationID, "Accept the service request successfully.")
	}
	var code ResultCode
	switch {
	case !s.initiatorValid(initiator, credential):
		code = ResultInitiatorInvalid
	case sc.Result != "":
		code = sc.Result
	case amount < b2cMinAmount:
		code = ResultBelowMinimum
	case amount > b2cMaxAmount:
		code = ResultAboveMaximum
	case amount*100 > s.utility:
		code = ResultInsufficientFunds // "The B2C account does not have enough money in its utility account"
	default:
		code = ResultSuccess
	}
	x.p.Result = code
	body.ResultCode = code
	body.ResultDesc = describe(code, sc.ResultDesc)
	if code == ResultSuccess {
		s.utility -= amount * 100
		body.ResultParameters = &resultParameters{ResultParameter: []keyValue{
			{Key: "TransactionAmount", Value: json.Number(fmt.Sprint(amount))},
			{Key: "TransactionReceipt", Value: x.p.TransactionID},
			{Key: "ReceiverPartyPublicName", Value: customerName(partyB)},
			{Key: "TransactionCompletedDateTime", Value: now.In(eat).Format("02.01.2006 15:04:05")},
			{Key: "B2CUtilityAccountAvailableFunds", Value: json.Number(cents(s.utility))},
			{Key: "B2CWorkingAccountAvailableFunds", Value: json.Number(cents(s.working))},
			{Key: "B2CRecipientIsRegisteredCustomer", Value: "Y"},
			{Key: "B2CChargesPaidAccountAvailableFunds", Value: json.Number(cents(s.charges))},
		}}
	}
	s.sendResultLocked(sc, resultURL, timeoutURL, resultEnvelope{Result: body}, nil)
	return ack(ocid, x.p.ConversationID, "Accept the service request successfully.")
}

// B2CCount is the number of B2C requests accepted (acknowledged, or processed before a Processed
// fault lost the answer). Each is a payment: the fake does not de-duplicate.
func (s *Server) B2CCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.b2cTxns)
}

// B2CCountFor is the number of B2C requests received with this OriginatorConversationID,
// including any refused as duplicates (Options.RejectDuplicateOriginatorConversationID).
func (s *Server) B2CCountFor(originatorConversationID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b2cByOCID[originatorConversationID]
}

// B2CPayments are the B2C payments accepted so far, oldest first.
func (s *Server) B2CPayments() []B2CPayment {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]B2CPayment, len(s.b2cTxns))
	for i, x := range s.b2cTxns {
		out[i] = x.p
	}
	return out
}

// ---- common fields of the initiator APIs ----

type initiatorRequest struct {
	initiator, credential, timeoutURL, resultURL, remarks, occasion string
}

// initiatorFields reads and checks the fields Transaction Status, Reversal and Account Balance
// share. remarksMin is the minimum length of Remarks (0: optional); timeoutRequired says whether
// QueueTimeOutURL is mandatory.
func (s *Server) initiatorFields(m map[string]json.RawMessage, remarksMin int, timeoutRequired bool) (initiatorRequest, answer, bool) {
	var r initiatorRequest
	r.initiator, _ = field(m, "Initiator")
	if r.initiator == "" {
		return r, s.badRequest("Initiator"), false
	}
	r.credential, _ = field(m, "SecurityCredential")
	if r.credential == "" {
		return r, s.badRequest("SecurityCredential"), false
	}
	r.resultURL, _ = field(m, "ResultURL")
	if !absoluteURL(r.resultURL) {
		return r, s.badRequest("ResultURL"), false
	}
	r.timeoutURL, _ = field(m, "QueueTimeOutURL")
	if (timeoutRequired || r.timeoutURL != "") && !absoluteURL(r.timeoutURL) {
		return r, s.badRequest("QueueTimeOutURL"), false
	}
	r.remarks, _ = field(m, "Remarks")
	if n := len([]rune(r.remarks)); n < remarksMin || n > 100 {
		return r, s.badRequest("Remarks"), false
	}
	r.occasion, _ = field(m, "Occasion", "Occassion")
	if len([]rune(r.occasion)) > 100 {
		return r, s.badRequest("Occasion"), false
	}
	return r, answer{}, true
}

func (s *Server) newOCIDLocked(now time.Time) (ocid, convID string, seq int64) {
	seq = s.nextSeq()
	// Like the documented "f1e2-4b95-a71d-b30d3cdbb7a7735297".
	ocid = fmt.Sprintf("%s-%s-%s-%s%d", randomHex(4), randomHex(4), randomHex(4), randomHex(12), seq)
	return ocid, conversationID(now, seq), seq
}

// ---- Transaction Status ----

// transactionStatus follows https://developer.safaricom.co.ke/apis/TransactionStatus: Initiator,
// SecurityCredential, CommandID "TransactionStatusQuery", TransactionID (the M-PESA receipt) or
// OriginalConversationID, PartyA, IdentifierType, ResultURL, QueueTimeOutURL, Remarks, Occasion;
// the page's sample body spells two keys "Command ID" and "Transaction ID", which the fake
// accepts too. The result is POSTed to ResultURL with the documented ResultParameters. The fake
// knows the receipts of its successful STK and B2C payments and the OriginatorConversationIDs of
// its B2C payments (the latest one when several share it). An unknown or unpaid transaction is
// not documented; the fake answers R000002 "The OriginalTransactionID is invalid.".
func (s *Server) transactionStatus(m map[string]json.RawMessage, base string) answer {
	r, a, ok := s.initiatorFields(m, 0, true)
	if !ok {
		return a
	}
	command, _ := field(m, "CommandID", "Command ID")
	if command != "TransactionStatusQuery" {
		return s.badRequest("CommandID")
	}
	txID, _ := field(m, "TransactionID", "Transaction ID")
	origID, _ := field(m, "OriginalConversationID")
	if txID == "" && origID == "" {
		return s.badRequest("TransactionID")
	}
	partyA, _ := field(m, "PartyA")
	if !digits(partyA, 5, 12) {
		return s.badRequest("PartyA")
	}
	idType, _ := field(m, "IdentifierType")
	if !digits(idType, 1, 2) {
		return s.badRequest("IdentifierType")
	}

	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statusCount++
	ocid, convID, seq := s.newOCIDLocked(now)
	sc, scripted := s.statusScripts[txID]
	if !scripted && origID != "" {
		sc = s.statusScripts[origID]
	}
	body := resultBody{
		ResultType:               0,
		OriginatorConversationID: ocid,
		ConversationID:           convID,
		TransactionID:            receipt(seq),
		ReferenceData:            &referenceData{ReferenceItem: keyValue{Key: "Occasion", Value: nonEmpty(r.occasion)}},
	}
	params, found := s.lookupTransactionLocked(txID, origID)
	var code ResultCode
	switch {
	case !s.initiatorValid(r.initiator, r.credential):
		code = ResultInitiatorInvalid
	case sc.Result != "":
		code = sc.Result
	case found:
		code = ResultSuccess
	default:
		code = ResultInvalidOriginalTransaction
	}
	body.ResultCode = code
	body.ResultDesc = describe(code, sc.ResultDesc)
	if code == ResultSuccess && found {
		body.ResultParameters = &resultParameters{ResultParameter: params}
	}
	s.sendResultLocked(sc, r.resultURL, r.timeoutURL, resultEnvelope{Result: body}, queueTimeoutBody(ocid, convID))
	return ack(ocid, convID, "Accept the service request successfully.")
}

func nonEmpty(v string) any {
	if v == "" {
		return nil
	}
	return v
}

// lookupTransactionLocked finds a completed payment by receipt or B2C OriginatorConversationID and
// describes it with the documented Transaction Status ResultParameters. Callers hold s.mu.
func (s *Server) lookupTransactionLocked(txID, origID string) ([]keyValue, bool) {
	ts := func(t time.Time) string { return t.In(eat).Format("20060102150405") }
	if txID != "" {
		for _, x := range s.pushes {
			if x.push.ReceiptNumber == txID {
				at := x.push.Received.Add(x.script.RespondAfter)
				reason := "Pay Bill Online"
				if x.push.TransactionType == "CustomerBuyGoodsOnline" {
					reason = "Buy Goods Online"
				}
				return statusParams(customerName(x.push.PhoneNumber), s.orgName(), x.push.MerchantRequestID,
					ts(x.push.Received), ts(at), "Customer Account", reason, x.push.Amount, "", x.push.ReceiptNumber), true
			}
		}
	}
	for i := len(s.b2cTxns) - 1; i >= 0; i-- {
		p := s.b2cTxns[i].p
		if p.Result != ResultSuccess || (txID != "" && p.TransactionID != txID) || (txID == "" && p.OriginatorConversationID != origID) {
			continue
		}
		return statusParams(s.orgName(), customerName(p.PartyB), p.OriginatorConversationID,
			ts(p.Received), ts(p.Received), "Utility Account", "Business Payment to Customer via API", p.Amount, p.ConversationID, p.TransactionID), true
	}
	return nil, false
}

// statusParams is the documented Transaction Status ResultParameter list (values as strings, as
// in the sample). The sample lists "DebitPartyName" twice, the second with the customer; the
// fake names the second CreditPartyName.
func statusParams(debit, credit, ocid, initiated, finalised, debitAccount, reason string, amount int64, convID, receiptNo string) []keyValue {
	return []keyValue{
		{Key: "DebitPartyName", Value: debit},
		{Key: "CreditPartyName", Value: credit},
		{Key: "OriginatorConversationID", Value: ocid},
		{Key: "InitiatedTime", Value: initiated},
		{Key: "DebitAccountType", Value: debitAccount},
		{Key: "DebitPartyCharges"},
		{Key: "TransactionReason"},
		{Key: "ReasonType", Value: reason},
		{Key: "TransactionStatus", Value: "Completed"},
		{Key: "FinalisedTime", Value: finalised},
		{Key: "Amount", Value: fmt.Sprint(amount)},
		{Key: "ConversationID", Value: nonEmpty(convID)},
		{Key: "ReceiptNo", Value: receiptNo},
	}
}

// ---- Reversal ----

// reversal follows https://developer.safaricom.co.ke/apis/Reversal: Initiator, SecurityCredential,
// CommandID "TransactionReversal", TransactionID, Amount, ReceiverParty, RecieverIdentifierType
// (the page's spelling; ReceiverIdentifierType is accepted too), ResultURL, QueueTimeOutURL,
// Remarks (2-100 characters), Occasion. The result: success with DebitAccountBalance, Amount,
// TransCompletedTime, OriginalTransactionID, Charge, CreditPartyPublicName,
// DebitPartyPublicName; R000001 for a transaction already reversed; R000002 for one M-PESA does
// not know. The fake reverses the receipts of its successful STK payments (the Reversals API
// "enables the reversal of Customer-to-Business (C2B) transactions"; "B2C reversals are not
// supported via API", BusinessToCustomer FAQ 17).
func (s *Server) reversal(m map[string]json.RawMessage, base string) answer {
	r, a, ok := s.initiatorFields(m, 2, true)
	if !ok {
		return a
	}
	command, _ := field(m, "CommandID")
	if command != "TransactionReversal" {
		return s.badRequest("CommandID")
	}
	txID, _ := field(m, "TransactionID")
	if txID == "" {
		return s.badRequest("TransactionID")
	}
	amountText, _ := field(m, "Amount")
	amount, ok := wholeAmount(amountText)
	if !ok {
		return s.badRequest("Amount")
	}
	receiver, _ := field(m, "ReceiverParty")
	if !digits(receiver, 5, 7) {
		return s.badRequest("ReceiverParty")
	}
	idType, _ := field(m, "RecieverIdentifierType", "ReceiverIdentifierType")
	if !digits(idType, 1, 2) {
		return s.badRequest("RecieverIdentifierType")
	}

	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reversals++
	ocid, convID, seq := s.newOCIDLocked(now)
	sc := s.reversalScripts[txID]
	var original *stkTxn
	for _, x := range s.pushes {
		if x.push.ReceiptNumber != "" && x.push.ReceiptNumber == txID {
			original = x
		}
	}
	body := resultBody{
		ResultType:               0,
		OriginatorConversationID: ocid,
		ConversationID:           convID,
		TransactionID:            receipt(seq),
		ReferenceData:            &referenceData{ReferenceItem: keyValue{Key: "QueueTimeoutURL", Value: s.internalURL(base, "reversalresults")}},
	}
	var code ResultCode
	switch {
	case !s.initiatorValid(r.initiator, r.credential):
		code = ResultInitiatorInvalid
	case sc.Result != "":
		code = sc.Result
	case original == nil:
		code = ResultInvalidOriginalTransaction
	case s.reversed[txID]:
		code = ResultAlreadyReversed
	case amount*100 > s.utility:
		code = ResultInsufficientFunds
	default:
		code = ResultSuccess
	}
	if sc.QueueTimeout {
		code = ""
	}
	body.ResultCode = code
	body.ResultDesc = describe(code, sc.ResultDesc)
	if code == ResultSuccess {
		s.reversed[txID] = true
		s.utility -= amount * 100
		body.ResultParameters = &resultParameters{ResultParameter: []keyValue{
			{Key: "DebitAccountBalance", Value: fmt.Sprintf("Utility Account|KES|%s|%s|0.00|0.00", cents(s.utility), cents(s.utility))},
			{Key: "Amount", Value: json.Number(fmt.Sprintf("%d.00", amount))},
			{Key: "TransCompletedTime", Value: json.Number(now.In(eat).Format("20060102150405"))},
			{Key: "OriginalTransactionID", Value: txID},
			{Key: "Charge", Value: json.Number("0.00")},
			{Key: "CreditPartyPublicName", Value: customerName(original.push.PhoneNumber)},
			{Key: "DebitPartyPublicName", Value: s.orgName()},
		}}
	}
	s.sendResultLocked(sc, r.resultURL, r.timeoutURL, resultEnvelope{Result: body}, queueTimeoutBody(ocid, convID))
	return ack(ocid, convID, "Accept the service request successfully.")
}

// Reversed reports whether the fake has reversed the transaction with this receipt.
func (s *Server) Reversed(transactionID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reversed[transactionID]
}

// ---- Account Balance ----

// accountBalance follows https://developer.safaricom.co.ke/apis/AccountBalance: Initiator,
// SecurityCredential, CommandID "AccountBalance", PartyA, IdentifierType, Remarks,
// QueueTimeOutURL ("Remarks and queue timeout URL (optional)", FAQ 3), ResultURL; the
// acknowledgement, and the result with ResultType and ResultCode as strings (as in the documented
// result body) and the parameters AccountBalance — accounts separated by "&", each
// "Name|Currency|Available|Uncleared|Reserved|Unknown" as in "Working Account|KES|700000.00|
// 700000.00|0.00|0.00" — and BOCompletedTime (YYYYMMDDHHmmss).
func (s *Server) accountBalance(m map[string]json.RawMessage, base string) answer {
	r, a, ok := s.initiatorFields(m, 0, false)
	if !ok {
		return a
	}
	command, _ := field(m, "CommandID")
	if command != "AccountBalance" {
		return s.badRequest("CommandID")
	}
	partyA, _ := field(m, "PartyA")
	if !digits(partyA, 5, 7) {
		return s.badRequest("PartyA")
	}
	idType, _ := field(m, "IdentifierType")
	if !digits(idType, 1, 2) {
		return s.badRequest("IdentifierType")
	}

	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.balances++
	ocid, convID, seq := s.newOCIDLocked(now)
	sc := s.balanceScripts[partyA]
	var code ResultCode
	switch {
	case !s.initiatorValid(r.initiator, r.credential):
		code = ResultInitiatorInvalid
	case sc.Result != "":
		code = sc.Result
	default:
		code = ResultSuccess
	}
	body := resultBody{
		ResultType:               "0",
		ResultCode:               string(code),
		ResultDesc:               describe(code, sc.ResultDesc),
		OriginatorConversationID: ocid,
		ConversationID:           convID,
		TransactionID:            receipt(seq),
		ReferenceData:            &referenceData{ReferenceItem: keyValue{Key: "QueueTimeoutURL", Value: s.internalURL(base, "abresults")}},
	}
	if code == ResultSuccess {
		// The documented text has no full stop here.
		body.ResultDesc = describe(code, sc.ResultDesc)
		if sc.ResultDesc == "" {
			body.ResultDesc = "The service request is processed successfully"
		}
		body.ResultParameters = &resultParameters{ResultParameter: []keyValue{
			{Key: "AccountBalance", Value: s.accountBalanceValueLocked()},
			{Key: "BOCompletedTime", Value: now.In(eat).Format("20060102150405")},
		}}
	}
	s.sendResultLocked(sc, r.resultURL, r.timeoutURL, resultEnvelope{Result: body}, queueTimeoutBody(ocid, convID))
	return ack(ocid, convID, "Accept the service request successfully")
}

func (s *Server) accountBalanceValueLocked() string {
	acct := func(name string, c int64) string {
		return fmt.Sprintf("%s|KES|%s|%s|0.00|0.00", name, cents(c), cents(c))
	}
	return acct("Working Account", s.working) + "&" +
		acct("Float Account", 0) + "&" +
		acct("Utility Account", s.utility) + "&" +
		acct("Charges Paid Account", s.charges) + "&" +
		acct("Organization Settlement Account", 0)
}
