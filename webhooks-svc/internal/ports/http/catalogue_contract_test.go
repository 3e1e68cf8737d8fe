package http

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"rentalplatform/api"
	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"
)

// The contract and the event catalogue say the same: EventTypeName lists every type of the
// catalogue, the webhooks section has one entry per emitted type, and each entry's payload is an
// event of that type whose data.object is the catalogue's schema for it.
func TestCatalogueIsTheContracts(t *testing.T) {
	type schema struct {
		Ref        string `json:"$ref"`
		Enum       []any
		Properties map[string]*schema
	}
	var doc struct {
		Webhooks map[string]struct {
			Post struct {
				RequestBody struct {
					Content map[string]struct{ Schema schema }
				} `json:"requestBody"`
			}
		}
		Components struct{ Schemas map[string]*schema }
	}
	if err := json.Unmarshal(api.PublicJSON(), &doc); err != nil {
		t.Fatal(err)
	}
	resolve := func(s *schema) *schema {
		if s != nil && s.Ref != "" {
			return doc.Components.Schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")]
		}
		return s
	}
	strs := func(s *schema) []string {
		var out []string
		for _, v := range s.Enum {
			if v, ok := v.(string); ok {
				out = append(out, v)
			}
		}
		return out
	}
	names := doc.Components.Schemas["EventTypeName"]
	if names == nil || !slices.Equal(slices.Sorted(slices.Values(strs(names))), eventtype.All()) {
		t.Errorf("EventTypeName's enum is not the catalogue (libs/eventtype.All):\n%v\n%v", names, eventtype.All())
	}
	var emitted []string
	for _, e := range eventtype.Catalogue() {
		if !e.Emitted {
			if _, ok := doc.Webhooks[e.Type]; ok {
				t.Errorf("webhooks has %s, which the platform does not emit", e.Type)
			}
			continue
		}
		emitted = append(emitted, e.Type)
		hook, ok := doc.Webhooks[e.Type]
		if !ok {
			t.Errorf("webhooks has no entry for %s, which the platform emits", e.Type)
			continue
		}
		body := resolve(&schema{Ref: hook.Post.RequestBody.Content["application/json"].Schema.Ref})
		if body == nil || body.Properties["type"] == nil || body.Properties["data"] == nil {
			t.Errorf("webhooks %s: its payload is not an event schema", e.Type)
			continue
		}
		if !slices.Contains(strs(body.Properties["type"]), e.Type) {
			t.Errorf("webhooks %s: its payload's type is one of %v", e.Type, body.Properties["type"].Enum)
		}
		if obj := resolve(body.Properties["data"]).Properties["object"]; obj == nil || obj.Ref != "#/components/schemas/"+e.Schema {
			t.Errorf("webhooks %s: data.object is %+v, the catalogue says %s", e.Type, obj, e.Schema)
		}
	}
	if len(doc.Webhooks) != len(emitted) {
		t.Errorf("webhooks has %d entries for %d emitted types", len(doc.Webhooks), len(emitted))
	}
}

// The contract's version is the API's current version, and the versions an endpoint may pin
// are the ones the platform renders.
func TestAPIVersionIsTheContracts(t *testing.T) {
	var doc struct {
		Info       struct{ Version string }
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct{ Enum []any }
			}
		}
	}
	if err := json.Unmarshal(api.PublicJSON(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Info.Version != events.APIVersion {
		t.Errorf("info.version %s, the API's current version is %s", doc.Info.Version, events.APIVersion)
	}
	var pinnable []string
	for _, v := range doc.Components.Schemas["CreateWebhookEndpointBody"].Properties["api_version"].Enum {
		if v, ok := v.(string); ok {
			pinnable = append(pinnable, v)
		}
	}
	if !slices.Equal(pinnable, events.APIVersions()) {
		t.Errorf("CreateWebhookEndpointBody.api_version takes %v, the platform renders %v", pinnable, events.APIVersions())
	}
}
