package docstore

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"rentalplatform/libs/outbox"
)

// Entries is an aggregate's outbox as it is stored: one binary field holding the BSON of the
// entries ({e: [...]}), not an array of subdocuments.
//
// Why: every entry carries its event's whole object, so the outbox is most of a busy
// aggregate's document, and the embedded store (FerretDB v1) stores documents as JSON with a
// type schema: every write of a document decodes the stored one and encodes the new one, field
// by field, and a nested object string is escaped JSON inside JSON. A binary value is one
// base64 string to it. Measured with a payment request and two entries (mongostore, replace
// by _id, CPU per operation): 1.84 ms as an array, 1.34 ms as one binary field, 1.28 ms with no
// outbox at all; a find by _id 1.47 against 1.00 ms. No query reads inside the outbox (the
// relay's scan filters on outbox_since), so nothing is lost on MongoDB either, where the same
// form is used: one format, whichever store. Documents written with the outbox as an array are
// read as before and rewritten in this form by their next write.
type Entries []outbox.Doc

// entriesSubtype is the binary subtype of a stored outbox (user-defined range, 0x80–0xff).
const entriesSubtype = 0x80

// entriesBox is the document inside the binary value.
type entriesBox struct {
	E []outbox.Doc `bson:"e"`
}

// IsZero makes `omitempty` leave out an empty outbox.
func (e Entries) IsZero() bool { return len(e) == 0 }

// MarshalBSONValue stores the entries as one binary value.
func (e Entries) MarshalBSONValue() (byte, []byte, error) {
	raw, err := bson.Marshal(entriesBox{E: e})
	if err != nil {
		return 0, nil, fmt.Errorf("docstore: encode the outbox: %w", err)
	}
	return byte(bson.TypeBinary), bsoncore.AppendBinary(nil, entriesSubtype, raw), nil
}

// UnmarshalBSONValue reads the binary form, or an array of entries as written before it.
func (e *Entries) UnmarshalBSONValue(t byte, data []byte) error {
	switch bson.Type(t) {
	case bson.TypeNull, bson.TypeUndefined:
		*e = nil
		return nil
	case bson.TypeArray:
		var docs []outbox.Doc
		if err := bson.UnmarshalValue(bson.TypeArray, data, &docs); err != nil {
			return fmt.Errorf("docstore: decode the outbox (array): %w", err)
		}
		*e = docs
		return nil
	case bson.TypeBinary:
		sub, raw, _, ok := bsoncore.ReadBinary(data)
		if !ok || sub != entriesSubtype {
			return fmt.Errorf("docstore: the outbox is a binary value of subtype %#x, not an outbox", sub)
		}
		var box entriesBox
		if err := bson.Unmarshal(raw, &box); err != nil {
			return fmt.Errorf("docstore: decode the outbox: %w", err)
		}
		*e = box.E
		return nil
	}
	return fmt.Errorf("docstore: the outbox is stored as %s", bson.Type(t))
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
		sub, raw := v.Binary()
		if sub != entriesSubtype {
			return nil, fmt.Errorf("docstore: the outbox is a binary value of subtype %#x, not an outbox", sub)
		}
		a, ok := bson.Raw(raw).Lookup("e").ArrayOK()
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
