// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package fakedaraja

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// STKPush is one M-Pesa Express push the fake accepted (a prompt sent to a customer).
type STKPush struct {
	MerchantRequestID string
	CheckoutRequestID string
	BusinessShortCode string
	TransactionType   string
	Amount            int64 // whole shillings
	PartyA            string
	PartyB            string
	PhoneNumber       string
	CallBackURL       string
	AccountReference  string
	TransactionDesc   string
	// Received is when the push was accepted, by the fake's Clock.
	Received time.Time
	// Result is the outcome the customer gives (from the phone's script, or a limit rule).
	Result ResultCode
	// ReceiptNumber is the MpesaReceiptNumber of a successful payment, "" otherwise.
	ReceiptNumber string
}

type stkTxn struct {
	push            STKPush
	script          STKScript
	desc            string
	queriesLeft     int
	callbackStarted bool
}

func (x *stkTxn) answered(now time.Time) bool {
	return !now.Before(x.push.Received.Add(x.script.RespondAfter))
}

// stkMaxAmount is the M-Pesa Express per-transaction limit: "A registered customer can receive up
// to Ksh 250,000 per transaction" (MpesaExpressSimulate FAQ 5). A larger amount is accepted and
// fails with result 3.
const stkMaxAmount = 250_000

// checkSTKCredentials: the BusinessShortCode must be the fake's ("500.001.1001 Merchant does not
// exist") and the Password base64(Shortcode+Passkey+Timestamp) of that shortcode and timestamp
// ("500.001.1001 Wrong credentials"), both with HTTP 500
// (https://developer.safaricom.co.ke/apis/MpesaExpressSimulate, error codes).
func (s *Server) checkSTKCredentials(shortCode, password, timestamp string) (answer, bool) {
	if shortCode != s.opts.ShortCode {
		return s.errorAnswer(http.StatusInternalServerError, "500.001.1001", "Merchant does not exist"), false
	}
	want := s.STKPassword(timestamp)
	if subtle.ConstantTimeCompare([]byte(password), []byte(want)) != 1 {
		return s.errorAnswer(http.StatusInternalServerError, "500.001.1001", "Wrong credentials"), false
	}
	return answer{}, true
}

func validTimestamp(v string) bool {
	if !digits(v, 14, 14) {
		return false
	}
	_, err := time.Parse("20060102150405", v)
	return err == nil
}

// stkPush follows https://developer.safaricom.co.ke/apis/MpesaExpressSimulate: the request
// parameters ("All fields apart from TransactionDesc are all mandatory"; AccountReference "Max 12
// characters"; TransactionDesc "Max 13 characters"; TransactionType CustomerPayBillOnline or
// CustomerBuyGoodsOnline; PartyA/PhoneNumber 2547XXXXXXXX), the response body, and the callback
// payload sent to CallBackURL.
func (s *Server) stkPush(m map[string]json.RawMessage, _ string) answer {
	shortCode, _ := field(m, "BusinessShortCode")
	if !digits(shortCode, 5, 7) {
		return s.badRequest("BusinessShortCode")
	}
	password, _ := field(m, "Password")
	if password == "" {
		return s.badRequest("Password")
	}
	timestamp, _ := field(m, "Timestamp")
	if !validTimestamp(timestamp) {
		return s.badRequest("Timestamp")
	}
	txType, _ := field(m, "TransactionType")
	if txType != "CustomerPayBillOnline" && txType != "CustomerBuyGoodsOnline" {
		return s.badRequest("TransactionType")
	}
	amountText, _ := field(m, "Amount")
	amount, ok := wholeAmount(amountText)
	if !ok {
		return s.badRequest("Amount")
	}
	partyA, _ := field(m, "PartyA")
	if !msisdn(partyA) {
		return s.badRequest("PartyA")
	}
	partyB, _ := field(m, "PartyB")
	if !digits(partyB, 5, 7) {
		return s.badRequest("PartyB")
	}
	phone, _ := field(m, "PhoneNumber")
	if !msisdn(phone) {
		return s.badRequest("PhoneNumber")
	}
	callbackURL, _ := field(m, "CallBackURL")
	if !absoluteURL(callbackURL) {
		return s.badRequest("CallBackURL")
	}
	accountRef, _ := field(m, "AccountReference")
	if accountRef == "" || len([]rune(accountRef)) > 12 {
		return s.badRequest("AccountReference")
	}
	desc, _ := field(m, "TransactionDesc")
	if len([]rune(desc)) > 13 {
		return s.badRequest("TransactionDesc")
	}
	if a, ok := s.checkSTKCredentials(shortCode, password, timestamp); !ok {
		return a
	}

	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opts.LockSubscriber {
		for _, x := range s.pushes {
			if x.push.PhoneNumber == phone && !x.answered(now) {
				return s.errorAnswer(http.StatusInternalServerError, "500.001.1001",
					"Unable to lock subscriber, a transaction is already in process for the current subscriber")
			}
		}
	}
	sc := s.phoneScripts[phone]
	result := sc.Result.orSuccess()
	switch {
	case sc.Result != "":
	case txType == "CustomerPayBillOnline" && partyB != shortCode:
		// 2028 "The request is not permitted according to product assignment": "Either the
		// TransactionType or PartyB is incorrect ... For Pay Bills: PartyB: Pay Bill"
		// (MpesaExpressSimulate, result codes). For Buy Goods, PartyB is the till number.
		result = "2028"
	case amount > stkMaxAmount:
		result = ResultAboveMaximum
	}
	seq := s.nextSeq()
	x := &stkTxn{
		push: STKPush{
			// Like the documented "2654-4b64-97ff-b827b542881d3130".
			MerchantRequestID: fmt.Sprintf("%s-%s-%s-%s%d", randomHex(4), randomHex(4), randomHex(4), randomHex(12), seq),
			CheckoutRequestID: s.checkoutIDLocked(now, phone),
			BusinessShortCode: shortCode,
			TransactionType:   txType,
			Amount:            amount,
			PartyA:            partyA,
			PartyB:            partyB,
			PhoneNumber:       phone,
			CallBackURL:       callbackURL,
			AccountReference:  accountRef,
			TransactionDesc:   desc,
			Received:          now,
			Result:            result,
		},
		script:      sc,
		desc:        describe(result, sc.ResultDesc),
		queriesLeft: sc.QueryProcessing,
	}
	if result == ResultSuccess {
		x.push.ReceiptNumber = receipt(seq)
		s.utility += amount * 100
	}
	s.pushes = append(s.pushes, x)
	s.pushByID[x.push.CheckoutRequestID] = x

	switch {
	case sc.Delivery == DeliverNever:
		x.callbackStarted = true
	case sc.RespondAfter <= 0:
		s.startSTKCallbackLocked(x)
	default:
		s.goAnswerLaterLocked(x)
	}
	return answer{status: http.StatusOK, body: map[string]string{
		"MerchantRequestID":   x.push.MerchantRequestID,
		"CheckoutRequestID":   x.push.CheckoutRequestID,
		"ResponseCode":        "0",
		"ResponseDescription": "Success. Request accepted for processing",
		"CustomerMessage":     "Success. Request accepted for processing",
	}}
}

// checkoutIDLocked is like the documented "ws_CO_23052022122137653708374149": ws_CO_, the date and
// time (DDMMYYYYHHmmss), three more digits, and the phone number without 254. The three digits
// are a sequence, so that the ID is unique even under a frozen clock.
func (s *Server) checkoutIDLocked(now time.Time, phone string) string {
	for {
		id := fmt.Sprintf("ws_CO_%s%03d%s", now.In(eat).Format("02012006150405"), s.nextSeq()%1000, phone[3:])
		if _, taken := s.pushByID[id]; !taken {
			return id
		}
	}
}

// goAnswerLaterLocked starts the callback of a push whose customer answers after RespondAfter:
// after that much real time, unless a query already started it. Callers hold s.mu.
func (s *Server) goAnswerLaterLocked(x *stkTxn) {
	if s.closed {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if !s.sleep(s.ctx, x.script.RespondAfter) {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if !x.callbackStarted {
			s.startSTKCallbackLocked(x)
		}
	}()
}

func (s *Server) startSTKCallbackLocked(x *stkTxn) {
	x.callbackStarted = true
	s.goDeliverLocked(x.push.CallBackURL, stkCallbackBody(x), x.script.CallbackDelay, x.script.Delivery.copies())
}

type stkCallbackEnvelope struct {
	Body struct {
		StkCallback stkCallback `json:"stkCallback"`
	} `json:"Body"`
}

type stkCallback struct {
	MerchantRequestID string
	CheckoutRequestID string
	ResultCode        ResultCode
	ResultDesc        string
	CallbackMetadata  *stkMetadata `json:",omitempty"`
}

type stkMetadata struct {
	Item []nameValue
}

type nameValue struct {
	Name  string
	Value any `json:",omitempty"`
}

// stkCallbackBody is the documented callback payload (MpesaExpressSimulate, "Sample Successful
// Callback Payload" / "Sample Unsuccessful Callback Payload"): CallbackMetadata only on success,
// with Amount (a decimal number, 1.00), MpesaReceiptNumber, TransactionDate (a number,
// YYYYMMDDHHmmss) and PhoneNumber (a number).
func stkCallbackBody(x *stkTxn) stkCallbackEnvelope {
	var e stkCallbackEnvelope
	cb := &e.Body.StkCallback
	cb.MerchantRequestID = x.push.MerchantRequestID
	cb.CheckoutRequestID = x.push.CheckoutRequestID
	cb.ResultCode = x.push.Result
	cb.ResultDesc = x.desc
	if x.push.Result == ResultSuccess {
		at := x.push.Received.Add(x.script.RespondAfter).In(eat)
		cb.CallbackMetadata = &stkMetadata{Item: []nameValue{
			{Name: "Amount", Value: json.Number(fmt.Sprintf("%d.00", x.push.Amount))},
			{Name: "MpesaReceiptNumber", Value: x.push.ReceiptNumber},
			{Name: "TransactionDate", Value: json.Number(at.Format("20060102150405"))},
			{Name: "PhoneNumber", Value: json.Number(x.push.PhoneNumber)},
		}}
	}
	return e
}

// stkQuery follows https://developer.safaricom.co.ke/apis/MpesaExpressQuery: BusinessShortCode,
// Password, Timestamp and CheckoutRequestID (the only way to name a push: there is no lookup by
// AccountReference); the answer carries ResponseCode, ResponseDescription, MerchantRequestID,
// CheckoutRequestID, ResultCode and ResultDesc (codes as strings, as in the documented body).
// While the customer has not answered it answers HTTP 500 {"requestId": <CheckoutRequestID>,
// "errorCode": "500.001.1001", "errorMessage": "The transaction is being processed"}, "the
// standard response from the Mpesa Express Query status API" while a push is pending (Safaricom,
// https://github.com/safaricom/LNMOnlineAndroidSample/issues/13).
func (s *Server) stkQuery(m map[string]json.RawMessage, _ string) answer {
	s.mu.Lock()
	s.stkQueries++
	s.mu.Unlock()
	shortCode, _ := field(m, "BusinessShortCode")
	if !digits(shortCode, 5, 7) {
		return s.badRequest("BusinessShortCode")
	}
	password, _ := field(m, "Password")
	if password == "" {
		return s.badRequest("Password")
	}
	timestamp, _ := field(m, "Timestamp")
	if !validTimestamp(timestamp) {
		return s.badRequest("Timestamp")
	}
	id, _ := field(m, "CheckoutRequestID")
	if id == "" {
		return s.badRequest("CheckoutRequestID")
	}
	if a, ok := s.checkSTKCredentials(shortCode, password, timestamp); !ok {
		return a
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.pushByID[id]
	if x == nil || x.push.BusinessShortCode != shortCode {
		return s.badRequest("CheckoutRequestID")
	}
	processing := answer{status: http.StatusInternalServerError, body: errorBody{
		RequestID: id, ErrorCode: "500.001.1001", ErrorMessage: "The transaction is being processed",
	}}
	if !x.answered(now) {
		return processing
	}
	if !x.callbackStarted {
		s.startSTKCallbackLocked(x)
	}
	if x.queriesLeft > 0 {
		x.queriesLeft--
		return processing
	}
	return answer{status: http.StatusOK, body: map[string]string{
		"ResponseCode":        "0",
		"ResponseDescription": "The service request has been accepted successfully",
		"MerchantRequestID":   x.push.MerchantRequestID,
		"CheckoutRequestID":   x.push.CheckoutRequestID,
		"ResultCode":          string(x.push.Result),
		"ResultDesc":          x.desc,
	}}
}

// SendCallback sends (again) the callback of the push with this CheckoutRequestID now, in a
// goroutine, whatever its script says (no delay, once). It reports whether the push exists.
func (s *Server) SendCallback(checkoutRequestID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.pushByID[checkoutRequestID]
	if x == nil {
		return false
	}
	x.callbackStarted = true
	s.goDeliverLocked(x.push.CallBackURL, stkCallbackBody(x), 0, 1)
	return true
}

// STKPushCount is the number of STK pushes accepted (prompts sent to customers), including pushes
// processed before a Processed fault lost the answer; invalid or refused requests are not pushes.
func (s *Server) STKPushCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pushes)
}

// STKPushCountFor is the number of pushes accepted for this PhoneNumber and AccountReference.
func (s *Server) STKPushCountFor(phone, accountReference string) int {
	return s.countPushes(func(p *STKPush) bool { return p.PhoneNumber == phone && p.AccountReference == accountReference })
}

// STKPushCountForPhone is the number of pushes accepted for this PhoneNumber.
func (s *Server) STKPushCountForPhone(phone string) int {
	return s.countPushes(func(p *STKPush) bool { return p.PhoneNumber == phone })
}

// STKPushCountForAccount is the number of pushes accepted with this AccountReference.
func (s *Server) STKPushCountForAccount(accountReference string) int {
	return s.countPushes(func(p *STKPush) bool { return p.AccountReference == accountReference })
}

func (s *Server) countPushes(match func(*STKPush) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, x := range s.pushes {
		if match(&x.push) {
			n++
		}
	}
	return n
}

// STKPushes are the pushes accepted so far, oldest first.
func (s *Server) STKPushes() []STKPush {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]STKPush, len(s.pushes))
	for i, x := range s.pushes {
		out[i] = x.push
	}
	return out
}

// STKPushByID is the push with this CheckoutRequestID.
func (s *Server) STKPushByID(checkoutRequestID string) (STKPush, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if x := s.pushByID[checkoutRequestID]; x != nil {
		return x.push, true
	}
	return STKPush{}, false
}
