// Package docstore keeps a service's aggregates as versioned MongoDB documents, one document
// per aggregate: typed reads by _id, inserts, updates through a function (read → apply →
// replace on the version read, retried when another writer won), keyset pages, index
// declarations, and each aggregate's outbox of events, written in the same single-document
// write as the change and handed to the outbox relay.
//
// A service's Mongo adapter declares its bson document with Meta embedded inline, maps it to
// and from its domain, and writes its queries; everything else is here. In particular every
// accommodation of the embedded store (FerretDB v1 over SQLite, see docs/architecture.md)
// lives in this package behind one strategy chosen when the database is opened (Open):
//
//   - MongoDB: a replace is conditional on {_id, version} (atomic, so several processes may
//     write one document); writes go out as they come; the fast path clears published events
//     at once; every declared index is created.
//   - The embedded store: a conditional write there is neither atomic nor index-backed, so
//     writes filter on {_id} alone, which is correct because one process owns the data and
//     writers of one document are serialised in-process; writes are group-committed (a
//     write costs much less in a batch than alone); published events are cleared in memory
//     and left stored until the aggregate's next write (a clear costs as much as the write
//     that raised the event), with a published mark telling later processes which stored
//     entries are published (marks.go); Bracket holds a document during quick work and stores
//     before and after in one write; only unique indexes are created (SQLite is never handed
//     a filter it could serve with another); TTL indexes are refused by the store.
//
// On both, writers of one document within the process queue behind each other, and the
// updates that queued while a write was in flight are applied together and stored in one
// write (each caller still learns its own outcome).
package docstore
