package docstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/google/btree"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// queryIndex is, on a store one process owns (the embedded one), the fields that the
// collection's queries filter and sort on, held in memory for every document, in _id order.
//
// The embedded store evaluates every filter but {_id: value} in Go over the whole collection,
// decoding each document: a list of one account's newest ten payment requests cost as much as
// reading every request of every account, and a list of 10,000 cases took seconds. Lists grew
// slower minute by minute under a steady load (the soak), until requests queued and the store's
// process ran out of memory. Here the collection answers such a query from its index (the
// fields of the indexes it declares, which on MongoDB serve the same queries), then reads the
// documents found by _id, the lookup that store serves from an index.
//
// The index is built by one scan of the collection, at the first query it serves, and kept as
// the process writes (every write of the collection passes here). A document's fields are
// only replaced by those of a newer version, so a scan that raced a write cannot bring back the
// older state, and a document removed while the scan runs is remembered until it ends. A write
// that failed without an answer may or may not have landed: its document is read again before
// the next query. Documents found are checked against the whole filter once read, so a stale
// entry can hide nothing it should not show... but only this process's writes keep the index
// true: like the rest of the embedded strategy, it relies on one process owning the data.
type queryIndex struct {
	mu     sync.RWMutex
	held   map[string]bool         // the paths held, and the parent of each dotted one
	lay    *layout                 // how the held fields are encoded, in an order of the held paths
	tops   []string                // the top-level fields of held paths: what the scan reads
	order  *btree.BTreeG[*heldDoc] // by _id: also the lookup by _id (no map beside it)
	built  bool
	gen    int           // counts invalidations: a scan started before one does not complete the index
	scan   chan struct{} // closed when the scan in progress ends; nil if none
	gone   map[string]bool
	stale  map[string]bool
	missed map[string]int // queries not served, by reason (Collection.Unserved)
	buf    []byte         // extract's scratch space (under mu)
}

// heldDoc is a document as the index holds it: its _id, version, and the values of the held
// fields, in its layout's order, each a BSON type byte (0: missing) followed by the value's
// bytes. Without the field names of a BSON document it is about 40 % smaller, and the index
// holds one per document of the collection, for as long as the document is stored: its size
// is what the process grows by per document stored (BenchmarkQueryIndexMemory). So values is
// one immutable string (one allocation, a 48-byte struct), and id is the _id's bytes within it
// rather than a copy.
type heldDoc struct {
	id      string
	version int64
	lay     *layout
	values  string
}

// layout is the order of the held paths in a heldDoc's values, and which of them are the parent
// of another (held as whether they are present and not null).
type layout struct {
	paths  []string
	pos    map[string]int
	parent []bool
}

// get implements fields.
func (d *heldDoc) get(path string) (bson.RawValue, bool) {
	i, ok := d.lay.pos[path]
	if !ok {
		return bson.RawValue{}, false
	}
	// Read in place: values is never written once made, and the RawValue returned is only read.
	b := unsafe.Slice(unsafe.StringData(d.values), len(d.values))
	for j := 0; len(b) > 0; j++ {
		t := bsoncore.Type(b[0])
		b = b[1:]
		if t == 0 {
			if j == i {
				return bson.RawValue{}, false
			}
			continue
		}
		v, rest, ok := bsoncore.ReadValue(b, t)
		if !ok {
			return bson.RawValue{}, false
		}
		if j == i {
			return bson.RawValue{Type: bson.Type(t), Value: v.Data}, true
		}
		b = rest
	}
	return bson.RawValue{}, false
}

func newQueryIndex() *queryIndex {
	x := &queryIndex{
		held:   map[string]bool{},
		order:  btree.NewG(32, func(a, b *heldDoc) bool { return a.id < b.id }),
		gone:   map[string]bool{},
		stale:  map[string]bool{},
		missed: map[string]int{},
	}
	// The fields every query may use: the _id (the order of lists), the mark of an aggregate
	// waiting as deleted, and the creation time lists filter on.
	x.declare("_id", "deleted", "created")
	return x
}

// declare holds paths too (the keys of the collection's indexes). Adding a path to an index
// already built starts it over: its documents do not hold the new field yet.
func (x *queryIndex) declare(paths ...string) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	added := false
	for _, p := range paths {
		for p != "" {
			if !x.held[p] {
				x.held[p] = true
				added = true
			}
			p, _, _ = cutLast(p)
		}
	}
	if !added {
		return
	}
	x.tops = x.tops[:0]
	lay := &layout{pos: map[string]int{}}
	for p := range x.held {
		if !strings.Contains(p, ".") {
			x.tops = append(x.tops, p)
		}
		lay.paths = append(lay.paths, p)
	}
	slices.Sort(x.tops)
	slices.Sort(lay.paths)
	for i, p := range lay.paths {
		lay.pos[p] = i
		lay.parent = append(lay.parent, x.isParent(p))
	}
	x.lay = lay
	x.invalidateLocked()
}

// cutLast splits "a.b.c" into "a.b" and "c"; a path without a dot has no parent ("").
func cutLast(p string) (parent, last string, ok bool) {
	i := strings.LastIndexByte(p, '.')
	if i < 0 {
		return "", p, false
	}
	return p[:i], p[i+1:], true
}

func (x *queryIndex) holds(path string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.held[path]
}

// invalidateLocked drops the index; the next query scans the collection again.
func (x *queryIndex) invalidateLocked() {
	x.built = false
	x.gen++
	x.order.Clear(false)
}

// invalidate drops the index (a removal it could not follow, such as a purge by a filter it
// does not evaluate).
func (x *queryIndex) invalidate() {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.invalidateLocked()
}

// extract returns a stored document as the index holds it. It is called with mu held.
func (x *queryIndex) extract(raw bson.Raw) (*heldDoc, error) {
	idValue, err := raw.LookupErr("_id")
	if err != nil || idValue.Type != bson.TypeString {
		return nil, fmt.Errorf("docstore: a document without a string _id")
	}
	d := &heldDoc{version: versionOf(raw), lay: x.lay}
	buf := x.buf[:0]
	idAt := -1 // where the _id's characters start in buf
	for i, p := range x.lay.paths {
		if p == "_id" {
			// A BSON string: its length (with the NUL) in 4 bytes, then its characters.
			buf = append(buf, byte(idValue.Type))
			idAt = len(buf) + 4
			buf = append(buf, idValue.Value...)
			continue
		}
		v, err := raw.LookupErr(splitPath(p)...)
		switch {
		case err != nil:
			buf = append(buf, 0) // missing
		case v.Type == bson.TypeEmbeddedDocument && x.lay.parent[i]:
			// Only whether it is there and not null matters: its held fields have their own entries.
			buf = append(buf, byte(bson.TypeEmbeddedDocument), 5, 0, 0, 0, 0) // {}
		default:
			buf = append(append(buf, byte(v.Type)), v.Value...)
		}
	}
	x.buf = buf
	d.values = string(buf) // a copy of exactly its size
	if idAt >= 0 {
		d.id = d.values[idAt : idAt+len(idValue.Value)-5]
	} else {
		d.id = idValue.StringValue()
	}
	return d, nil
}

func splitPath(p string) []string { return strings.Split(p, ".") }

// isParent reports whether a held path is the parent of another.
func (x *queryIndex) isParent(p string) bool {
	for q := range x.held {
		if len(q) > len(p) && q[len(p)] == '.' && strings.HasPrefix(q, p) {
			return true
		}
	}
	return false
}

// put holds a document as this process stored it, unless the index has a newer version.
func (x *queryIndex) put(raw bson.Raw) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.built && x.scan == nil {
		// The scan that builds the index will read it. (Nothing is stale then either: the scan
		// reads what is stored.)
		if id, ok := raw.Lookup("_id").StringValueOK(); ok {
			delete(x.stale, id)
		}
		return
	}
	d, err := x.extract(raw)
	if err != nil {
		return
	}
	delete(x.gone, d.id)
	delete(x.stale, d.id)
	x.putLocked(d)
}

func (x *queryIndex) putLocked(d *heldDoc) {
	if old, ok := x.order.Get(d); ok && old.version > d.version {
		return
	}
	x.order.ReplaceOrInsert(d)
}

// remove forgets a document removed from the store.
func (x *queryIndex) remove(id string) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(id)
}

func (x *queryIndex) removeLocked(id string) {
	x.order.Delete(&heldDoc{id: id})
	delete(x.stale, id)
	if x.scan != nil {
		x.gone[id] = true // the scan in progress may still return it
	}
}

// removeMatching forgets the documents a filter removed from the store, or drops the whole
// index when the filter is not one it evaluates.
func (x *queryIndex) removeMatching(filter bson.D) {
	if x == nil {
		return
	}
	m, err := compileFilter(filter, x.holds)
	x.mu.Lock()
	defer x.mu.Unlock()
	if err != nil {
		x.invalidateLocked()
		return
	}
	var ids []string
	x.order.Ascend(func(d *heldDoc) bool {
		if m(d) {
			ids = append(ids, d.id)
		}
		return true
	})
	for _, id := range ids {
		x.removeLocked(id)
	}
}

// unknown marks a document whose write failed without an answer: it is read again before the
// next query.
func (x *queryIndex) unknown(id string) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.stale[id] = true
}

// scanTimeout bounds the scan that builds the index.
const scanTimeout = 10 * time.Minute

// ready builds the index if it is not, and reads again the documents whose last write had no
// answer. Concurrent callers share one scan.
func (x *queryIndex) ready(ctx context.Context, coll *mongo.Collection, read func(context.Context, string) (bson.Raw, bool, error)) error {
	for {
		x.mu.Lock()
		if x.built {
			stale := make([]string, 0, len(x.stale))
			for id := range x.stale {
				stale = append(stale, id)
			}
			x.mu.Unlock()
			return x.reread(ctx, stale, read)
		}
		if wait := x.scan; wait != nil {
			x.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		done := make(chan struct{})
		x.scan, x.gone = done, map[string]bool{}
		gen, tops := x.gen, slices.Clone(x.tops)
		x.mu.Unlock()

		// The scan is everyone's: it goes on when the query that started it ends.
		scanCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scanTimeout)
		err := x.load(scanCtx, coll, tops)
		cancel()
		x.mu.Lock()
		x.scan = nil
		if err == nil && gen == x.gen {
			x.built = true
			x.gone = map[string]bool{}
		}
		x.mu.Unlock()
		close(done)
		if err != nil {
			return fmt.Errorf("index %s: %w", coll.Name(), err)
		}
	}
}

// load reads the held fields of every stored document.
func (x *queryIndex) load(ctx context.Context, coll *mongo.Collection, tops []string) error {
	proj := bson.D{}
	for _, t := range tops {
		proj = append(proj, bson.E{Key: t, Value: 1})
	}
	proj = append(proj, bson.E{Key: "version", Value: 1})
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetProjection(proj).SetBatchSize(1000))
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cursorCloseTimeout)
		defer cancel()
		_ = cur.Close(closeCtx)
	}()
	for cur.Next(ctx) {
		x.mu.Lock()
		d, err := x.extract(cur.Current)
		if err == nil && !x.gone[d.id] {
			x.putLocked(d)
		}
		x.mu.Unlock()
	}
	return cur.Err()
}

// reread reads documents again whose stored state is unknown.
func (x *queryIndex) reread(ctx context.Context, ids []string, read func(context.Context, string) (bson.Raw, bool, error)) error {
	for _, id := range ids {
		raw, found, err := read(ctx, id)
		if err != nil {
			return err
		}
		if found {
			x.put(raw)
		} else {
			x.remove(id)
		}
	}
	return nil
}

// match is a document the index found, with the value it is sorted by.
type match struct {
	doc *heldDoc
	key bson.RawValue
}

// find returns the documents whose held fields match m, ordered by key (ascending when dir is
// 1), at most limit of them (0: all). Ordered by _id, it walks the documents in that order and
// stops at the limit, starting past after when it is given (a page's cursor, exclusive).
func (x *queryIndex) find(m matcher, key string, dir int, limit int, after string) []*heldDoc {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []*heldDoc
	if key == "_id" {
		visit := func(d *heldDoc) bool {
			if d.id == after {
				return true
			}
			if m(d) {
				out = append(out, d)
			}
			return limit == 0 || len(out) < limit
		}
		switch {
		case dir > 0 && after != "":
			x.order.AscendGreaterOrEqual(&heldDoc{id: after}, visit)
		case dir > 0:
			x.order.Ascend(visit)
		case after != "":
			x.order.DescendLessOrEqual(&heldDoc{id: after}, visit)
		default:
			x.order.Descend(visit)
		}
		return out
	}
	var found []match
	x.order.Ascend(func(d *heldDoc) bool {
		if m(d) {
			v, ok := d.get(key)
			if !ok {
				v = bson.RawValue{Type: bson.TypeNull}
			}
			found = append(found, match{doc: d, key: v})
		}
		return true
	})
	slices.SortStableFunc(found, func(a, b match) int { return dir * orderValues(a.key, b.key) })
	if limit > 0 && len(found) > limit {
		found = found[:limit]
	}
	out = make([]*heldDoc, len(found))
	for i, f := range found {
		out[i] = f.doc
	}
	return out
}

// orderValues is MongoDB's sort order for the values of one field: null (or missing) first,
// then numbers, strings, object ids, booleans, dates, the types this index holds.
func orderValues(a, b bson.RawValue) int {
	if c, ok := compareValues(a, b); ok {
		return c
	}
	return cmp.Compare(typeRank(a.Type), typeRank(b.Type))
}

func typeRank(t bson.Type) int {
	switch t {
	case bson.TypeNull:
		return 1
	case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble:
		return 2
	case bson.TypeString:
		return 3
	case bson.TypeEmbeddedDocument:
		return 4
	case bson.TypeArray:
		return 5
	case bson.TypeObjectID:
		return 7
	case bson.TypeBoolean:
		return 8
	case bson.TypeDateTime:
		return 9
	}
	return 10
}

// missedQuery records a query the index could not serve.
func (x *queryIndex) missedQuery(reason string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.missed[reason]++
}
