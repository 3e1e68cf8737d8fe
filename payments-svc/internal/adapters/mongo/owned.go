package mongo

import (
	"context"

	"rentalplatform/libs/docstore"
)

// ownedDoc is a stored document that knows its owner. Both repositories read by _id alone (a
// primary-key read on every store) and check the owner in code: account and mode never change,
// so checking them after the read is as safe as filtering on them.
type ownedDoc interface {
	ownedBy(account string, livemode bool) bool
}

// getOwned reads a document of the caller's, or notFound.
func getOwned[D ownedDoc](ctx context.Context, docs *docstore.Collection[D], id, account string, livemode bool, notFound func(string) error) (D, error) {
	d, err := docs.Current(ctx, id)
	if err == nil && !d.ownedBy(account, livemode) {
		var zero D
		return zero, notFound(id)
	}
	return d, err
}

// updateOwned applies fn to the aggregate a document holds (load) and stores the result
// (store); an empty account skips the owner check (the engine).
func updateOwned[D ownedDoc, A any](ctx context.Context, docs *docstore.Collection[D], id, account string, livemode bool,
	notFound func(string) error, load func(D) A, store func(*D, A), fn func(A) error) (A, error) {
	var out A
	_, err := docs.Update(ctx, id, func(d *D) error {
		if account != "" && !(*d).ownedBy(account, livemode) {
			return notFound(id)
		}
		a := load(*d)
		if err := fn(a); err != nil {
			return err
		}
		out = a
		store(d, a)
		return nil
	})
	if err != nil {
		var zero A
		return zero, err
	}
	return out, nil
}
