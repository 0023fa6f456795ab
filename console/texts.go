// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

// texts are the console's words in English and Swahili (TestEveryTextInBothLanguages keeps the
// two catalogues the same shape).
var texts = map[string]map[string]string{
	"en": {
		"title": "Paygate console", "skip": "Skip to content", "otherLang": "Kiswahili",
		"navOverview": "Overview", "navPayments": "Payments", "navAudit": "Audit trail",
		"signOut": "Sign out", "signOutEverywhere": "Sign out everywhere", "signedInAs": "Signed in as",
		"envSandbox": "Sandbox", "envProduction": "Production", "environment": "Environment",

		"signInTitle": "Sign in", "email": "Email", "password": "Password", "signInButton": "Sign in",
		"wrongPassword":   "The email or password is not right.",
		"locked":          "Too many failed attempts: this account is locked for a while. Try again later.",
		"tooManyAttempts": "Too many sign-in attempts from your address. Wait a minute and try again.",

		"inviteTitle": "Choose your password", "inviteIntro": "You were invited to the Paygate console as",
		"newPassword": "New password (at least 12 characters)", "confirmPassword": "The same password again",
		"setPassword":       "Set password",
		"passwordsDiffer":   "The two passwords are not the same.",
		"passwordTooShort":  "Use at least 12 characters.",
		"passwordTooLong":   "Use at most 128 characters.",
		"passwordWeak":      "Choose a password that is not your email or one character repeated.",
		"invitationInvalid": "This invitation link is not valid or has expired. Ask your account's owner for a new one.",

		"sfTitle": "Second factor", "sfIntro": "Enter the 6-digit code from your authenticator app.",
		"code": "Code", "verify": "Continue", "sfRecoveryHint": "Lost your phone? Enter one of your recovery codes instead.",
		"wrongCode": "That code is not right, or was used already.",

		"enrolTitle":       "Set up your second factor",
		"enrolIntro":       "Your role needs a second factor. Add this key to an authenticator app (for example on your phone), then enter the code it shows.",
		"enrolSecretLabel": "Key", "enrolLink": "Open in an authenticator app on this device",
		"enrolCodeLabel": "Code from the app", "enrolButton": "Turn on",

		"rcTitle":  "Your recovery codes",
		"rcIntro":  "Each code signs you in once if you lose your authenticator. Keep them somewhere safe: they are shown only now.",
		"continue": "Continue to the console",

		"overviewTitle": "Overview", "balanceTitle": "Balance", "currency": "Currency", "available": "Available",
		"settled": "Settled", "reserved": "Reserved for payouts", "paidOut": "Paid out", "noBalance": "No money has moved in this environment yet.",

		"paymentsTitle": "Payments", "filterStatus": "Status", "any": "Any",
		"status-pending": "Pending", "status-success": "Succeeded", "status-failed": "Failed",
		"filterRef": "Your reference", "apply": "Filter", "colCreated": "Created", "colTrx": "Transaction",
		"colRef": "Reference", "colAmount": "Amount", "colStatus": "Status", "colGateway": "Gateway",
		"noPayments": "No payments match.", "prev": "Previous", "next": "Next", "showing": "Payments shown",
		"of": "of",

		"filterFrom": "From (UTC)", "filterTo": "To (UTC)", "filterPhone": "Customer phone",
		"dateInvalid":  "Give dates as YYYY-MM-DD, in the years 2000 to 9999.",
		"dateOrder":    "The To date is before the From date.",
		"phoneInvalid": "That is not a mobile number. Type it in full, for example +255712345678.",

		"paymentTitle": "Payment", "fee": "Fee", "net": "Net amount", "mode": "Mode", "customer": "Customer",
		"reason": "Reason", "refunded": "Refunded", "timelineTitle": "Timeline", "noTimeline": "Nothing recorded yet.",
		"tlCreated": "Created", "tlPushSent": "Prompt sent", "tlPushAnswered": "Provider answered",
		"tlSettled": "Settled", "tlWebhook": "Webhook sent",

		"auditTitle": "Audit trail", "colTime": "Time (UTC)", "colActor": "Who", "colAction": "Action",
		"colResult": "Result", "colAddress": "Address", "colReason": "Detail", "noAudit": "Nothing recorded yet.",

		"navRefunds": "Refunds", "navPayouts": "Payouts", "navSubscriptions": "Subscriptions", "navInvoices": "Invoices",
		"navSettings": "Settings", "navPeople": "People",
		"colID": "ID", "colPayable": "Paid out", "colDestination": "To", "colPlan": "Plan", "colNextCharge": "Next charge",
		"colSubscription": "Subscription", "colPeriod": "Period", "colAttempts": "Attempts",
		"noRows": "Nothing matches.", "rowsShown": "Shown", "filterRefused": "That filter is not valid; check what you typed.",
		"st-pending": "Pending", "st-processing": "Processing", "st-success": "Succeeded", "st-failed": "Failed",
		"st-active": "Active", "st-past_due": "Past due", "st-suspended": "Suspended", "st-cancelled": "Cancelled",
		"st-open": "Open", "st-paid": "Paid", "st-payment_failed": "Payment failed", "st-void": "Void",
		"apiCredentials": "API credentials", "businessID": "Business ID (X-Merchant-Key)", "apiKey": "API key",
		"apiSecret": "API secret", "env-sandbox": "Sandbox", "env-production": "Production",
		"secretHidden": "Set (never shown here)", "notIssued": "Not issued", "webhooksTitle": "Webhooks",
		"webhookFormat": "Format", "webhookSecret": "Signing secret", "notSet": "Not set",
		"allowedWebhookDomains": "Webhook domains allowed", "allowedRedirectDomains": "Redirect domains allowed",
		"anyDomain": "Any", "settlementNumber": "Settlement number", "gatewaysTitle": "Gateways",
		"gatewaysSelected": "Your checkout offers the gateways you selected:", "gatewaysAll": "Your checkout offers every gateway of your currencies:",
		"gatewayCode": "Code", "noGateways": "No gateway serves your currencies yet.",
		"inviteSent": "Send this link to", "role": "Role", "twoFactor": "Second factor", "lastSignIn": "Last sign-in",
		"actions": "Actions", "role-owner": "Owner", "role-developer": "Developer", "role-finance": "Finance", "role-viewer": "Viewer",
		"yes": "Yes", "no": "No", "invited": "Invited", "remove": "Remove", "inviteSomeone": "Invite someone",
		"sendInvite": "Make invitation link", "inviteInvalid": "That address cannot be invited (it may belong to another account).",
		"noSuchUser": "There is no such user.", "lastOwner": "The account's last owner cannot be removed.",
		"notYourRole": "Your role cannot see this page.", "exportCSV": "Download these payments as CSV",

		"errorTitle": "Something is not right", "backToConsole": "Back to the console",
		"crossOrigin": "This request did not come from the console's own pages, so it was refused.",
		"notFound":    "There is nothing here.", "signInAgain": "Your session has ended. Sign in again.",
		"unavailable": "The console cannot reach its data right now. Try again in a moment.",
		"serverError": "An internal error occurred. Try again in a moment.",
	},
	"sw": {
		"title": "Dashibodi ya Paygate", "skip": "Ruka hadi maudhui", "otherLang": "English",
		"navOverview": "Muhtasari", "navPayments": "Malipo", "navAudit": "Kumbukumbu za shughuli",
		"signOut": "Toka", "signOutEverywhere": "Toka kila mahali", "signedInAs": "Umeingia kama",
		"envSandbox": "Majaribio", "envProduction": "Halisi", "environment": "Mazingira",

		"signInTitle": "Ingia", "email": "Barua pepe", "password": "Nenosiri", "signInButton": "Ingia",
		"wrongPassword":   "Barua pepe au nenosiri si sahihi.",
		"locked":          "Majaribio mengi yameshindwa: akaunti hii imefungwa kwa muda. Jaribu tena baadaye.",
		"tooManyAttempts": "Majaribio mengi ya kuingia kutoka anwani yako. Subiri dakika moja ujaribu tena.",

		"inviteTitle": "Chagua nenosiri lako", "inviteIntro": "Umealikwa kwenye dashibodi ya Paygate kama",
		"newPassword": "Nenosiri jipya (angalau herufi 12)", "confirmPassword": "Nenosiri hilo hilo tena",
		"setPassword":       "Weka nenosiri",
		"passwordsDiffer":   "Manenosiri mawili hayafanani.",
		"passwordTooShort":  "Tumia angalau herufi 12.",
		"passwordTooLong":   "Tumia herufi zisizozidi 128.",
		"passwordWeak":      "Chagua nenosiri ambalo si barua pepe yako wala herufi moja iliyorudiwa.",
		"invitationInvalid": "Kiungo hiki cha mwaliko si sahihi au muda wake umekwisha. Omba mmiliki wa akaunti kiungo kipya.",

		"sfTitle": "Uthibitisho wa pili", "sfIntro": "Weka msimbo wa tarakimu 6 kutoka kwenye programu yako ya uthibitisho.",
		"code": "Msimbo", "verify": "Endelea", "sfRecoveryHint": "Umepoteza simu? Weka mojawapo ya misimbo yako ya dharura badala yake.",
		"wrongCode": "Msimbo huo si sahihi, au umeshatumika.",

		"enrolTitle":       "Weka uthibitisho wako wa pili",
		"enrolIntro":       "Jukumu lako linahitaji uthibitisho wa pili. Ongeza ufunguo huu kwenye programu ya uthibitisho (kwa mfano kwenye simu yako), kisha weka msimbo inaouonyesha.",
		"enrolSecretLabel": "Ufunguo", "enrolLink": "Fungua kwenye programu ya uthibitisho ya kifaa hiki",
		"enrolCodeLabel": "Msimbo kutoka kwenye programu", "enrolButton": "Washa",

		"rcTitle":  "Misimbo yako ya dharura",
		"rcIntro":  "Kila msimbo unakuingiza mara moja ukipoteza programu yako ya uthibitisho. Iweke mahali salama: inaonyeshwa sasa tu.",
		"continue": "Endelea kwenye dashibodi",

		"overviewTitle": "Muhtasari", "balanceTitle": "Salio", "currency": "Sarafu", "available": "Inapatikana",
		"settled": "Imelipwa", "reserved": "Imetengwa kwa malipo ya nje", "paidOut": "Imetolewa", "noBalance": "Hakuna pesa iliyohamishwa katika mazingira haya bado.",

		"paymentsTitle": "Malipo", "filterStatus": "Hali", "any": "Yoyote",
		"status-pending": "Yanasubiri", "status-success": "Yamefanikiwa", "status-failed": "Yameshindwa",
		"filterRef": "Kumbukumbu yako", "apply": "Chuja", "colCreated": "Yameundwa", "colTrx": "Muamala",
		"colRef": "Kumbukumbu", "colAmount": "Kiasi", "colStatus": "Hali", "colGateway": "Njia ya malipo",
		"noPayments": "Hakuna malipo yanayolingana.", "prev": "Iliyotangulia", "next": "Inayofuata", "showing": "Malipo yanayoonyeshwa",
		"of": "kati ya",

		"filterFrom": "Kuanzia (UTC)", "filterTo": "Hadi (UTC)", "filterPhone": "Simu ya mteja",
		"dateInvalid":  "Andika tarehe kama YYYY-MM-DD, kati ya mwaka 2000 na 9999.",
		"dateOrder":    "Tarehe ya Hadi iko kabla ya tarehe ya Kuanzia.",
		"phoneInvalid": "Hiyo si namba ya simu ya mkononi. Iandike kamili, kwa mfano +255712345678.",

		"paymentTitle": "Malipo", "fee": "Ada", "net": "Kiasi halisi", "mode": "Njia", "customer": "Mteja",
		"reason": "Sababu", "refunded": "Yamerejeshwa", "timelineTitle": "Mfuatano wa matukio", "noTimeline": "Hakuna kilichorekodiwa bado.",
		"tlCreated": "Yameundwa", "tlPushSent": "Ombi limetumwa kwa simu", "tlPushAnswered": "Mtoa huduma amejibu",
		"tlSettled": "Yamekamilika", "tlWebhook": "Webhook imetumwa",

		"auditTitle": "Kumbukumbu za shughuli", "colTime": "Muda (UTC)", "colActor": "Nani", "colAction": "Kitendo",
		"colResult": "Matokeo", "colAddress": "Anwani", "colReason": "Maelezo", "noAudit": "Hakuna kilichorekodiwa bado.",

		"navRefunds": "Marejesho", "navPayouts": "Malipo ya nje", "navSubscriptions": "Usajili", "navInvoices": "Ankara",
		"navSettings": "Mipangilio", "navPeople": "Watu",
		"colID": "Kitambulisho", "colPayable": "Kilicholipwa", "colDestination": "Kwenda", "colPlan": "Mpango", "colNextCharge": "Malipo yajayo",
		"colSubscription": "Usajili", "colPeriod": "Kipindi", "colAttempts": "Majaribio",
		"noRows": "Hakuna kinacholingana.", "rowsShown": "Vinavyoonyeshwa", "filterRefused": "Kichujio hicho si sahihi; angalia ulichoandika.",
		"st-pending": "Inasubiri", "st-processing": "Inashughulikiwa", "st-success": "Imefanikiwa", "st-failed": "Imeshindwa",
		"st-active": "Hai", "st-past_due": "Imechelewa", "st-suspended": "Imesimamishwa", "st-cancelled": "Imeghairiwa",
		"st-open": "Wazi", "st-paid": "Imelipwa", "st-payment_failed": "Malipo yameshindwa", "st-void": "Batili",
		"apiCredentials": "Vitambulisho vya API", "businessID": "Kitambulisho cha biashara (X-Merchant-Key)", "apiKey": "Ufunguo wa API",
		"apiSecret": "Siri ya API", "env-sandbox": "Majaribio", "env-production": "Halisi",
		"secretHidden": "Imewekwa (haionyeshwi hapa)", "notIssued": "Haijatolewa", "webhooksTitle": "Webhooks",
		"webhookFormat": "Muundo", "webhookSecret": "Siri ya kusaini", "notSet": "Haijawekwa",
		"allowedWebhookDomains": "Vikoa vya webhook vinavyoruhusiwa", "allowedRedirectDomains": "Vikoa vya kuelekeza vinavyoruhusiwa",
		"anyDomain": "Yoyote", "settlementNumber": "Namba ya kupokea malipo", "gatewaysTitle": "Njia za malipo",
		"gatewaysSelected": "Ukurasa wako wa malipo unatoa njia ulizochagua:", "gatewaysAll": "Ukurasa wako wa malipo unatoa kila njia ya sarafu zako:",
		"gatewayCode": "Msimbo", "noGateways": "Hakuna njia ya malipo inayohudumia sarafu zako bado.",
		"inviteSent": "Tuma kiungo hiki kwa", "role": "Jukumu", "twoFactor": "Uthibitisho wa pili", "lastSignIn": "Mara ya mwisho kuingia",
		"actions": "Vitendo", "role-owner": "Mmiliki", "role-developer": "Msanidi", "role-finance": "Fedha", "role-viewer": "Mtazamaji",
		"yes": "Ndiyo", "no": "Hapana", "invited": "Amealikwa", "remove": "Ondoa", "inviteSomeone": "Alika mtu",
		"sendInvite": "Tengeneza kiungo cha mwaliko", "inviteInvalid": "Anwani hiyo haiwezi kualikwa (huenda ni ya akaunti nyingine).",
		"noSuchUser": "Hakuna mtumiaji huyo.", "lastOwner": "Mmiliki wa mwisho wa akaunti hawezi kuondolewa.",
		"notYourRole": "Jukumu lako haliwezi kuona ukurasa huu.", "exportCSV": "Pakua malipo haya kama CSV",

		"errorTitle": "Kuna tatizo", "backToConsole": "Rudi kwenye dashibodi",
		"crossOrigin": "Ombi hili halikutoka kwenye kurasa za dashibodi yenyewe, kwa hiyo limekataliwa.",
		"notFound":    "Hakuna kitu hapa.", "signInAgain": "Kipindi chako kimekwisha. Ingia tena.",
		"unavailable": "Dashibodi haiwezi kufikia data yake sasa hivi. Jaribu tena baada ya muda mfupi.",
		"serverError": "Hitilafu ya ndani imetokea. Jaribu tena baada ya muda mfupi.",
	},
}

// addTexts adds a page's words, in English and Swahili, to the console's catalogues.
func addTexts(more map[string]map[string]string) {
	for lang, words := range more {
		for key, text := range words {
			texts[lang][key] = text
		}
	}
}
