package domain

import (
	"strconv"
	"time"

	"rentalplatform/libs/ids"
)

// ChargeID is the id of a charge recorded before charges had ids of their own: derived from
// the request, the attempt and the method (the charge's identity, as in its idempotency key
// "<request>:<attempt>:<method>"), so it is the same on every read and never collides with
// another charge of the request. It is a well-formed ch_ id dated by the request's creation
// (ids.Derived); a request id that carries no time (not made by package ids) gives the zero
// time.
func ChargeID(request string, attempt int, method string) string {
	at, ok := ids.Time(ids.PaymentRequest, request)
	if !ok {
		at = time.UnixMilli(0)
	}
	return ids.Derived(ids.Charge, at, []byte(request+":"+strconv.Itoa(attempt)+":"+method))
}
