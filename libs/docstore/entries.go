package docstore

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"rentalplatform/libs/outbox"
)

// Entries is an aggregate's outbox as it is stored: packed (Packed's form, read and written by
// Packed's code for anything but the one layout below), since every entry carries its
// event's whole object, which makes the outbox most of a busy aggregate's document. No query
// reads inside it (the relay's scan filters on outbox_since).
//
// Its entries are encoded and decoded by hand rather than by the driver's reflection: every
// write of an aggregate decodes its document and encodes it again (the store's change of a
// cached copy, its no-op check, the caller's copy), each time with the entries the embedded
// store retains after publishing them. Measured in payments-svc during the payments bench:
// decoding those entries was 9 % of its CPU, their encoding 3 %. The form stored is the one
// the driver writes, byte for byte (TestEntriesCodecMatchesDriver), so stored documents and
// every reader of them are unchanged.
type Entries []outbox.Doc

// IsZero makes `omitempty` leave out an empty outbox.
func (e Entries) IsZero() bool { return len(e) == 0 }

// MarshalBSONValue stores the entries as Packed does.
func (e Entries) MarshalBSONValue() (byte, []byte, error) {
	if len(e) == 0 {
		return Packed[outbox.Doc](e).MarshalBSONValue()
	}
	size := 64
	for i := range e {
		size += entrySize(&e[i])
	}
	// The binary value's header (length, subtype) first, its length set once the document
	// inside is written.
	out := make([]byte, 5, size)
	out[4] = packedSubtype
	start, out := bsoncore.AppendDocumentStart(out)
	arr, out := bsoncore.AppendArrayElementStart(out, "e")
	var key [20]byte
	for i := range e {
		out = appendEntry(out, strconv.AppendInt(key[:0], int64(i), 10), &e[i])
	}
	out, err := bsoncore.AppendArrayEnd(out, arr)
	if err == nil {
		out, err = bsoncore.AppendDocumentEnd(out, start)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("docstore: encode an outbox: %w", err)
	}
	bsoncore.UpdateLength(out, 0, int32(len(out)-5))
	return byte(bson.TypeBinary), out, nil
}

// UnmarshalBSONValue reads the entries in any form Packed reads; the packed form with the
// fields the driver writes is decoded here, anything else by Packed (which knows older forms
// and reports what is wrong).
func (e *Entries) UnmarshalBSONValue(t byte, data []byte) error {
	if bson.Type(t) == bson.TypeBinary {
		if sub, bin, _, ok := bsoncore.ReadBinary(data); ok {
			if raw, err := unpack(sub, bin); err == nil {
				if sub == packedSubtype {
					// raw is the caller's buffer; a decompressed one is new already.
					raw = bytes.Clone(raw)
				}
				if docs, ok := decodeEntries(raw); ok {
					*e = docs
					return nil
				}
			}
		}
	}
	return (*Packed[outbox.Doc])(e).UnmarshalBSONValue(t, data)
}

// entrySize is about the size of an entry's BSON, for the buffer's capacity.
func entrySize(d *outbox.Doc) int {
	n := 256 + len(d.ID) + len(d.Type) + len(d.Account) + len(d.APIVersion) + len(d.Object) + len(d.Previous) +
		len(d.Traceparent) + len(d.Tracestate) + len(d.DestinationURL) + len(d.DestinationSecret)
	if d.RequestID != nil {
		n += len(*d.RequestID)
	}
	if d.IdempotencyKey != nil {
		n += len(*d.IdempotencyKey)
	}
	return n
}

// appendEntry appends d as the array element key, with outbox.Doc's fields in their order and
// its tags' rules (a nil pointer is null; omitempty strings are left out when empty).
func appendEntry(dst, key []byte, d *outbox.Doc) []byte {
	dst = append(dst, byte(bson.TypeEmbeddedDocument))
	dst = append(dst, key...)
	dst = append(dst, 0)
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = bsoncore.AppendStringElement(dst, "id", d.ID)
	dst = bsoncore.AppendStringElement(dst, "type", d.Type)
	dst = bsoncore.AppendStringElement(dst, "account", d.Account)
	dst = bsoncore.AppendStringElement(dst, "api_version", d.APIVersion)
	dst = bsoncore.AppendInt64Element(dst, "created", d.Created)
	dst = bsoncore.AppendBooleanElement(dst, "livemode", d.Livemode)
	dst = appendStringPtr(dst, "request_id", d.RequestID)
	dst = appendStringPtr(dst, "idempotency_key", d.IdempotencyKey)
	dst = bsoncore.AppendStringElement(dst, "object", d.Object)
	dst = appendNonEmpty(dst, "previous", d.Previous)
	dst = appendNonEmpty(dst, "traceparent", d.Traceparent)
	dst = appendNonEmpty(dst, "tracestate", d.Tracestate)
	dst = appendNonEmpty(dst, "destination_url", d.DestinationURL)
	dst = appendNonEmpty(dst, "destination_secret", d.DestinationSecret)
	dst = append(dst, 0)
	bsoncore.UpdateLength(dst, int32(start), int32(len(dst)-start))
	return dst
}

func appendStringPtr(dst []byte, key string, s *string) []byte {
	if s == nil {
		return bsoncore.AppendNullElement(dst, key)
	}
	return bsoncore.AppendStringElement(dst, key, *s)
}

func appendNonEmpty(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	return bsoncore.AppendStringElement(dst, key, s)
}

// decodeEntries decodes {e: [entry, ...]}, each entry as appendEntry writes it (fields missing
// or unknown are fine, as for the driver). ok is false for anything else, such as a field of
// another type than the one written: Packed's decoder, the driver's, handles that.
//
// The entries' strings point into raw (see str), one allocation for all of them rather than
// one each: raw must be a buffer of the caller's that nothing writes to afterwards.
func decodeEntries(raw bson.Raw) (_ []outbox.Doc, ok bool) {
	rest, ok := docBody(raw)
	if !ok {
		return nil, false
	}
	el, rest, ok := bsoncore.ReadElement(rest)
	if !ok || el.Key() != "e" || len(rest) != 1 {
		return nil, false
	}
	v := el.Value()
	if v.Type == bsoncore.TypeNull {
		return nil, true
	}
	arr, isArray := v.ArrayOK()
	if !isArray {
		return nil, false
	}
	if rest, ok = docBody(arr); !ok {
		return nil, false
	}
	var docs []outbox.Doc
	for len(rest) > 1 {
		if el, rest, ok = bsoncore.ReadElement(rest); !ok {
			return nil, false
		}
		doc, isDoc := el.Value().DocumentOK()
		if !isDoc {
			return nil, false
		}
		docs = append(docs, outbox.Doc{})
		if !decodeEntry(doc, &docs[len(docs)-1]) {
			return nil, false
		}
	}
	return docs, len(rest) == 1
}

// docBody returns a document's elements and its terminating zero, once its length is checked.
func docBody(doc []byte) ([]byte, bool) {
	n, rest, ok := bsoncore.ReadLength(doc)
	if !ok || int(n) != len(doc) || n < 5 || doc[n-1] != 0 {
		return nil, false
	}
	return rest, true
}

func decodeEntry(doc bsoncore.Document, d *outbox.Doc) bool {
	rest, ok := docBody(doc)
	if !ok {
		return false
	}
	for len(rest) > 1 {
		var el bsoncore.Element
		if el, rest, ok = bsoncore.ReadElement(rest); !ok {
			return false
		}
		key := el.Key()
		known, ok := decodeField(d, key, el.Value())
		if lower := strings.ToLower(key); !known && lower != key {
			// The driver takes a field whose name differs in case only (FuzzEntriesDecode
			// found one): left to it.
			known, _ = decodeField(&outbox.Doc{}, lower, el.Value())
			ok = !known
		}
		if !ok {
			return false
		}
	}
	return len(rest) == 1
}

// decodeField sets the field of d named key from v; known is false for a name outbox.Doc does
// not have (which the driver ignores), ok false for a value of another type than written.
func decodeField(d *outbox.Doc, key string, v bsoncore.Value) (known, ok bool) {
	switch key {
	case "id":
		d.ID, ok = str(v)
	case "type":
		d.Type, ok = str(v)
	case "account":
		d.Account, ok = str(v)
	case "api_version":
		d.APIVersion, ok = str(v)
	case "created":
		d.Created, ok = v.Int64OK()
	case "livemode":
		d.Livemode, ok = boolean(v)
	case "request_id":
		d.RequestID, ok = stringPtr(v)
	case "idempotency_key":
		d.IdempotencyKey, ok = stringPtr(v)
	case "object":
		d.Object, ok = str(v)
	case "previous":
		d.Previous, ok = str(v)
	case "traceparent":
		d.Traceparent, ok = str(v)
	case "tracestate":
		d.Tracestate, ok = str(v)
	case "destination_url":
		d.DestinationURL, ok = str(v)
	case "destination_secret":
		d.DestinationSecret, ok = str(v)
	default:
		return false, true
	}
	return true, ok
}

func stringPtr(v bsoncore.Value) (*string, bool) {
	if v.Type == bsoncore.TypeNull {
		return nil, true
	}
	s, ok := str(v)
	if !ok {
		return nil, false
	}
	return &s, true
}

// boolean returns the boolean v holds, refusing a byte other than 0 and 1 as the driver does
// (bsoncore's BooleanOK takes any byte; FuzzEntriesDecode found it).
func boolean(v bsoncore.Value) (bool, bool) {
	if v.Type != bsoncore.TypeBoolean || len(v.Data) < 1 || v.Data[0] > 1 {
		return false, false
	}
	return v.Data[0] == 1, true
}

// str returns the string v holds without copying it: it points into the buffer v was read
// from, which decodeEntries's caller gave it for its entries alone.
func str(v bsoncore.Value) (string, bool) {
	if v.Type != bsoncore.TypeString {
		return "", false
	}
	n, rest, ok := bsoncore.ReadLength(v.Data)
	if !ok || n < 1 || int(n) > len(rest) || rest[n-1] != 0 {
		return "", false
	}
	if n == 1 {
		return "", true
	}
	return unsafe.String(&rest[0], n-1), true
}
