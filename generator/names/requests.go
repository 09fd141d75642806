package names

import "strings"

// RequestMethod names the Requester method of a request, and the method of
// its responder's interface: the key's last dotted word is the verb (a
// request key is in the imperative), followed by the words before it:
// pricing.quote -> QuotePricing, stock.reserve-batch -> ReserveBatchStock,
// ping -> Ping.
func RequestMethod(key string) string {
	i := strings.LastIndexByte(key, '.')
	if i < 0 {
		return Exported(key)
	}
	return Exported(key[i+1:]) + Exported(key[:i])
}

// ReplyType names a request's reply type when x-reply is inline:
// PricingQuote -> PricingQuoteReply.
func ReplyType(requestType string) string { return requestType + "Reply" }

// RequestVar names a request's runtime.Request variable:
// PricingQuote -> RequestPricingQuote.
func RequestVar(requestType string) string { return "Request" + requestType }

// RequestKeyConst names a request's routing-key constant:
// PricingQuote -> PricingQuoteRequestKey.
func RequestKeyConst(requestType string) string { return requestType + "RequestKey" }

// Responder names a responder's interface: pricing -> PricingResponder.
func Responder(responder string) string { return Exported(responder) + "Responder" }

// ResponderConstructor names the function that binds a responder's
// implementation to the runtime: pricing -> NewPricingResponder.
func ResponderConstructor(responder string) string { return "New" + Exported(responder) + "Responder" }

// The package-level names of the request side of a generated package.
const (
	RequesterType        = "Requester"
	RequesterConstructor = "NewRequester"
	RequestsExchangeVar  = "RequestsExchange"
)
