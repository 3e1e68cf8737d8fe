package docstore

import (
	"errors"
	"fmt"

	"github.com/klauspost/compress/s2"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Packed is an array stored as one binary value holding the BSON of its elements ({e: [...]}),
// not as an array of subdocuments: for an array no query reads inside and every write of its
// document carries.
//
// Why: the embedded store (FerretDB v1) stores documents as JSON with a type schema: every
// write of a document decodes the stored one and encodes the new one, field by field, every
// element of an array with a schema of its own, and a nested object string is escaped JSON
// inside JSON. A binary value is one base64 string to it. Measured with a payment request and
// two outbox entries (mongostore, replace by _id, CPU per operation): 1.84 ms as an array, 1.34
// ms as one binary field, 1.28 ms with no outbox at all; a find by _id 1.47 against 1.00 ms.
// An event with its twenty delivery targets (embedded/mongostore's BenchmarkPackedArray):
// insert 1.08 → 0.60 ms, replace 1.37 → 0.84 ms. MongoDB gets the same form; the embedded
// store keeps a large one compressed besides (compressPacked).
// Arrays written as arrays before a field was packed are read as before and rewritten in this
// form by their document's next write.
type Packed[T any] []T

// The binary subtypes of a packed array (user-defined range, 0x80–0xff): the BSON of {e: [...]}
// as it is, or compressed with S2 (a Snappy-compatible format).
const (
	packedSubtype           = 0x80
	packedCompressedSubtype = 0x81
)

// compressAbove is the size of the BSON from which the embedded store keeps a packed array
// compressed (compressPacked).
//
// Why: the embedded store's cost of a write grows with the document's size (FerretDB decodes
// the stored JSON and encodes the new, and SQLite parses the JSON text once per index
// expression to find its _id), and a packed outbox is most of a busy aggregate's document: a
// payment request carries its retained events (4.2 KB) in each of its updates. Those events'
// JSON repeats its field names and ids, which S2 compresses at about a gigabyte a second.
const compressAbove = 1024

// packedBox is the document inside the binary value.
type packedBox[T any] struct {
	E []T `bson:"e"`
}

// IsZero makes `omitempty` leave out an empty array.
func (p Packed[T]) IsZero() bool { return len(p) == 0 }

// MarshalBSONValue stores the elements as one binary value.
func (p Packed[T]) MarshalBSONValue() (byte, []byte, error) {
	raw, err := bson.Marshal(packedBox[T]{E: p})
	if err != nil {
		return 0, nil, fmt.Errorf("docstore: encode a packed array: %w", err)
	}
	return byte(bson.TypeBinary), bsoncore.AppendBinary(nil, packedSubtype, raw), nil
}

// compressPacked returns doc with each of its top-level packed arrays of compressAbove bytes or
// more compressed, or doc itself when it has none. The embedded strategy's writer calls it on
// what it stores; every reader reads both forms.
//
// Only there: one process owns the embedded store's data, so no reader of an earlier version
// meets the compressed form during an upgrade, as replicas sharing a MongoDB would; and
// MongoDB compresses what it stores itself.
func compressPacked(doc bson.Raw) (bson.Raw, error) {
	// The elements are walked in place: most documents stored have no packed array to
	// compress (an event without targets, a delivery) and are stored as they are, where
	// listing them (bson.Raw.Elements) cost an allocation per element, 3.6 % of webhooks-svc's
	// CPU under the payments bench.
	rest, ok := docBody(doc)
	if !ok {
		return nil, errors.New("docstore: a document to store is not valid BSON")
	}
	var out []byte
	var start int32
	for len(rest) > 1 {
		at := len(doc) - len(rest) // where this element starts
		e, next, ok := bsoncore.ReadElement(rest)
		if !ok {
			return nil, errors.New("docstore: a document to store is not valid BSON")
		}
		rest = next
		if sub, data, ok := e.Value().BinaryOK(); ok && sub == packedSubtype && len(data) >= compressAbove {
			if c := s2.Encode(nil, data); len(c) < len(data) {
				if out == nil {
					start, out = bsoncore.AppendDocumentStart(make([]byte, 0, len(doc)))
					out = append(out, doc[4:at]...) // the elements before
				}
				out = bsoncore.AppendBinaryElement(out, e.Key(), packedCompressedSubtype, c)
				continue
			}
		}
		if out != nil {
			out = append(out, e...)
		}
	}
	if out == nil {
		return doc, nil
	}
	out, err := bsoncore.AppendDocumentEnd(out, start)
	if err != nil {
		return nil, fmt.Errorf("docstore: compress a document's packed arrays: %w", err)
	}
	return out, nil
}

// unpack returns the BSON document inside a packed array's binary value.
func unpack(sub byte, data []byte) (bson.Raw, error) {
	switch sub {
	case packedSubtype:
		return data, nil
	case packedCompressedSubtype:
		raw, err := s2.Decode(nil, data)
		if err != nil {
			return nil, fmt.Errorf("docstore: decompress a packed array: %w", err)
		}
		return raw, nil
	}
	return nil, fmt.Errorf("docstore: a binary value of subtype %#x where a packed array belongs", sub)
}

// UnmarshalBSONValue reads the binary form, or an array as written before it.
func (p *Packed[T]) UnmarshalBSONValue(t byte, data []byte) error {
	switch bson.Type(t) {
	case bson.TypeNull, bson.TypeUndefined:
		*p = nil
		return nil
	case bson.TypeArray:
		var elems []T
		if err := bson.UnmarshalValue(bson.TypeArray, data, &elems); err != nil {
			return fmt.Errorf("docstore: decode a packed array (stored as an array): %w", err)
		}
		*p = elems
		return nil
	case bson.TypeBinary:
		sub, data, _, ok := bsoncore.ReadBinary(data)
		if !ok {
			return fmt.Errorf("docstore: a packed array's binary value is truncated")
		}
		raw, err := unpack(sub, data)
		if err != nil {
			return err
		}
		var box packedBox[T]
		if err := bson.Unmarshal(raw, &box); err != nil {
			return fmt.Errorf("docstore: decode a packed array: %w", err)
		}
		*p = box.E
		return nil
	}
	return fmt.Errorf("docstore: a packed array stored as %s", bson.Type(t))
}

// entryIDs returns the ids of the entries of a stored outbox value, without decoding their
// objects (in either stored form).
func entryIDs(v bson.RawValue) ([]string, error) {
	var arr bson.RawArray
	switch v.Type {
	case 0, bson.TypeNull:
		return nil, nil
	case bson.TypeArray:
		arr = v.Array()
	case bson.TypeBinary:
		raw, err := unpack(v.Binary())
		if err != nil {
			return nil, err
		}
		a, ok := raw.Lookup("e").ArrayOK()
		if !ok {
			return nil, fmt.Errorf("docstore: the stored outbox holds no entries array")
		}
		arr = a
	default:
		return nil, fmt.Errorf("docstore: the outbox is stored as %s", v.Type)
	}
	vals, err := arr.Values()
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(vals))
	for _, e := range vals {
		doc, _ := e.DocumentOK()
		id, _ := doc.Lookup("id").StringValueOK()
		ids = append(ids, id)
	}
	return ids, nil
}
