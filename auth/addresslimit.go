package auth

// AddressLimiter bounds attempts per client address on this replica, with
// the same rules as the login limit: for other endpoints that strangers may
// call, such as OAuth client registration.
type AddressLimiter struct{ l *ipLimiter }

// NewAddressLimiter allows perSecond attempts per address, in bursts of up
// to burst.
func NewAddressLimiter(perSecond float64, burst int) *AddressLimiter {
	return &AddressLimiter{l: newIPLimiter(perSecond, burst)}
}

// Allow takes one attempt from the budget of ip (of its /64 network for IPv6).
//
// Returns ERateLimited when the budget is spent.
func (a *AddressLimiter) Allow(ip string) error { return a.l.allow("", addressKey(ip)) }
