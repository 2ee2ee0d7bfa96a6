// Package experts records questions and grain-sample analysis requests for
// the agricultural experts, with the files that illustrate them, and notifies
// the experts' channel through the transactional outbox.
package experts

import (
	"fmt"
	"strings"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/httpx"
)

// Kinds of request.
const (
	KindQuestion    = "question"
	KindGrainSample = "grain-sample"
)

// StatusOpen is the state of a new request (experts answer it outside the API).
const StatusOpen = "open"

// Outbox event types: both go to the experts' channel (route "expert.").
const (
	EventQuestion    = "expert.question"
	EventGrainSample = "expert.grain_sample"
)

// Limits of a request: the question length is the seed's.
const (
	MaxQuestionLen = 1000
	MaxFiles       = 20
)

// QuestionInput is the body of "ask an ag expert". Files tells a missing
// member (required) from null (allowed).
type QuestionInput struct {
	Question *string                         `json:"question"`
	Files    httpx.Nullable[[]filestore.Ref] `json:"files"`
}

// GrainSampleInput is the body of "ask an ag expert about a grain sample".
type GrainSampleInput struct {
	Files httpx.Nullable[[]filestore.Ref] `json:"files"`
}

// Draft is a request whose shape is valid so far; its files still have to be
// resolved against the file store (existence and the caller's right to read).
type Draft struct {
	Kind     string
	Question string
	Refs     []filestore.Ref
	// Fields holds the failures found so far; the service adds the file checks.
	Fields *apierr.Fields
	// filesOK tells whether Refs may be resolved (the member had a valid shape).
	filesOK bool
}

// NewQuestion validates a question: the text is required and at most
// MaxQuestionLen characters; files must be sent, as null or a list.
func NewQuestion(in QuestionInput) Draft {
	d := Draft{Kind: KindQuestion, Fields: &apierr.Fields{}}
	if in.Question != nil {
		d.Question = strings.TrimSpace(*in.Question)
	}
	if d.Fields.Required("question", d.Question) {
		d.Fields.MaxLen("question", d.Question, MaxQuestionLen)
	}
	d.Refs, d.filesOK = parseFiles(in.Files, d.Fields, false)
	return d
}

// NewGrainSample validates a grain-sample request: at least one file.
func NewGrainSample(in GrainSampleInput) Draft {
	d := Draft{Kind: KindGrainSample, Fields: &apierr.Fields{}}
	d.Refs, d.filesOK = parseFiles(in.Files, d.Fields, true)
	return d
}

// parseFiles reads the files member: present, null or a list of at most
// MaxFiles references (at least one when required).
func parseFiles(files httpx.Nullable[[]filestore.Ref], f *apierr.Fields, required bool) ([]filestore.Ref, bool) {
	switch {
	case !files.Set:
		f.Add("files", "required", "is required (a list of file references, or null)", nil)
		return nil, false
	case files.Value == nil && required:
		f.Add("files", "min_items", "must hold at least one file", map[string]any{"min": 1})
		return nil, false
	case files.Value == nil:
		return nil, true
	}
	refs := *files.Value
	switch {
	case required && len(refs) == 0:
		f.Add("files", "min_items", "must hold at least one file", map[string]any{"min": 1})
		return nil, false
	case len(refs) > MaxFiles:
		f.Add("files", "max_items", fmt.Sprintf("must hold at most %d files", MaxFiles), map[string]any{"max": MaxFiles, "actual": len(refs)})
		return nil, false
	}
	return refs, true
}

// documentTypes are the sniffed types of documents a grain-sample request
// accepts besides images: lab sheets and reports as PDF, text, office and
// OpenDocument files.
var documentTypes = []string{
	"application/pdf",
	"text/plain",
	"text/csv",
	"application/rtf",
	"text/rtf",
	"application/msword",
	"application/vnd.ms-excel",
	"application/vnd.openxmlformats-officedocument.",
	"application/vnd.oasis.opendocument.",
}

// IsImageOrDocument tells whether a sniffed content type is an image or a
// document (prefix match, parameters such as charset ignored).
func IsImageOrDocument(contentType string) bool {
	ct := strings.ToLower(strings.TrimSpace(contentType))
	if strings.HasPrefix(ct, "image/") {
		return true
	}
	for _, t := range documentTypes {
		if strings.HasPrefix(ct, t) {
			return true
		}
	}
	return false
}
