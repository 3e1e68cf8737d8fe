// Package redis keeps the gateway's shared request state in Redis, where every replica sees
// it: rate-limit buckets (GCRA, through github.com/go-redis/redis_rate) and idempotency
// records.
//
// Key layout (every key expires by itself):
//
//	rate:gw:acct:<account>:<live|test>  GCRA state of an account in one mode (redis_rate)
//	rate:gw:key:<key id>                GCRA state of a key with a rate limit of its own
//	rate:gw:authfail:<client address>   GCRA state of failed authentications per address
//	gw:idemlock:<scope>                 lock of a running request: owner token + fingerprint,
//	                                    expires after the lock TTL
//	gw:idem:<slot seconds>:<slot>       hash of finished records, field <scope>: "D" + a JSON
//	                                    header line (fingerprint, status, headers, request
//	                                    id) + the response body; expires one TTL after the
//	                                    slot ends (slots are half the TTL)
//
// where <scope> is <account>:<live|test>:<hex SHA-256 of the Idempotency-Key>.
package redis
