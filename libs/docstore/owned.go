package docstore

// Owned is a stored document that knows its owner: the account and mode every read and write
// of an API object is scoped to.
type Owned interface {
	OwnedBy(account string, livemode bool) bool
}

// ownedOnly passes on a read's result when the document is the caller's, notFound(id) when not
// (and for a caller that names no account). Reads are by _id alone (a primary-key read on
// every store) with the owner checked in code: the owner of a document never changes, so
// checking it after the read is as safe as filtering on it.
func ownedOnly[D Owned](d D, err error, id, account string, livemode bool, notFound func(string) error) (D, error) {
	if err == nil && (account == "" || !d.OwnedBy(account, livemode)) {
		var zero D
		return zero, notFound(id)
	}
	return d, err
}
