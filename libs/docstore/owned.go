package docstore

import "context"

// Owned is a stored document that knows its owner: the account and mode every read and write
// of an API object is scoped to.
type Owned interface {
	OwnedBy(account string, livemode bool) bool
}

// GetOwned reads the document id of the caller's (account, mode), or notFound(id) for one that
// does not exist and one of another owner alike. It reads by _id alone (a primary-key read on
// every store) and checks the owner in code: the owner of a document never changes, so
// checking it after the read is as safe as filtering on it.
func GetOwned[D Owned](ctx context.Context, docs *Collection[D], id, account string, livemode bool, notFound func(string) error) (D, error) {
	d, err := docs.Get(ctx, id)
	return ownedOnly(d, err, id, account, livemode, notFound)
}

// CurrentOwned is GetOwned answered by Current: from the cache where this process is the only
// writer of the store.
func CurrentOwned[D Owned](ctx context.Context, docs *Collection[D], id, account string, livemode bool, notFound func(string) error) (D, error) {
	d, err := docs.Current(ctx, id)
	return ownedOnly(d, err, id, account, livemode, notFound)
}

// ownedOnly passes on a read's result when the document is the caller's, notFound(id) when not.
func ownedOnly[D Owned](d D, err error, id, account string, livemode bool, notFound func(string) error) (D, error) {
	if err == nil && (account == "" || !d.OwnedBy(account, livemode)) {
		var zero D
		return zero, notFound(id)
	}
	return d, err
}

// UpdateOwned is Update of a document of the caller's: it loads the aggregate the document
// holds (load), applies fn, and stores the result in the document (store, which may refuse the
// aggregate, and then nothing is written: Infallible adapts one that cannot); a document of
// another owner is notFound(id) and is not written, and so is every document for a caller
// that names no account. fn may run more than once (Update retries on a conflict), so it only
// changes the aggregate it is given.
func UpdateOwned[D Owned, A any](ctx context.Context, docs *Collection[D], id, account string, livemode bool,
	notFound func(string) error, load func(D) A, store func(*D, A) error, fn func(A) error) (A, error) {
	return update(ctx, docs, id, func(d D) bool { return account != "" && d.OwnedBy(account, livemode) }, notFound, load, store, fn)
}

// UpdateAny is UpdateOwned without the owner check: the service's own work on an aggregate it
// found by id (an expiry, a retry, the engine), never a caller's request.
func UpdateAny[D, A any](ctx context.Context, docs *Collection[D], id string,
	load func(D) A, store func(*D, A) error, fn func(A) error) (A, error) {
	return update(ctx, docs, id, func(D) bool { return true }, nil, load, store, fn)
}

func update[D, A any](ctx context.Context, docs *Collection[D], id string, mine func(D) bool,
	notFound func(string) error, load func(D) A, store func(*D, A) error, fn func(A) error) (A, error) {
	var out A
	_, err := docs.Update(ctx, id, func(d *D) error {
		if !mine(*d) {
			return notFound(id)
		}
		a := load(*d)
		if err := fn(a); err != nil {
			return err
		}
		out = a
		return store(d, a)
	})
	if err != nil {
		var zero A
		return zero, err
	}
	return out, nil
}

// Infallible adapts a store function that cannot fail to UpdateOwned's.
func Infallible[D, A any](store func(*D, A)) func(*D, A) error {
	return func(d *D, a A) error {
		store(d, a)
		return nil
	}
}
