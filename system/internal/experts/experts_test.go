package experts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/outbox"
	"github.com/agritrade/api/platform/outbox/outboxtest"
	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system"
	"github.com/agritrade/api/system/internal/experts"
	"github.com/uptrace/bun"
)

var (
	ann = auth.Principal{UserID: "user-ann", Name: "Ann Smith", OrgID: "org-farm", OrgName: "Smith Farms", Orgs: []string{"org-farm"}}
	bob = auth.Principal{UserID: "user-bob", Name: "Bob Buyer", OrgID: "org-buyer", OrgName: "Buyer Ltd", Orgs: []string{"org-buyer"}}
	// carl works for ann's farm: he may read the farm's files.
	carl = auth.Principal{UserID: "user-carl", Name: "Carl Smith", OrgID: "org-farm", OrgName: "Smith Farms", Orgs: []string{"org-farm"}}
)

// Real file heads: the file store sniffs the type from them.
var (
	pngBytes = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00"), bytes.Repeat([]byte{0}, 64)...)
	pdfBytes = []byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")
	mp4Bytes = append([]byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"), bytes.Repeat([]byte{0}, 64)...)
	binBytes = []byte{0x00, 0x01, 0x02, 0x03, 0xfe, 0xff, 0x10, 0x80, 0x00, 0x00, 0x7f}
)

type env struct {
	s      *testkit.Server
	mailer *outboxtest.SMTPServer
}

func newEnv(t *testing.T, db *bun.DB) *env {
	mailer := outboxtest.NewSMTPServer(t)
	s := testkit.NewServer(t, db, func(p *app.Platform) []module.Module {
		return []module.Module{system.New(p.Deps(system.Name))}
	}, testkit.Options{Configure: func(c *config.Config) {
		// The experts' channel: expert events go to the experts' mailbox.
		c.Notify.SMTP = config.SMTP{Host: mailer.Host, Port: mailer.Port, From: "noreply@agritrade.example", To: "ops@agritrade.example",
			Routes: map[string]string{"expert.": "experts@agritrade.example"}, Timeout: 5 * time.Second}
		c.Notify.PollInterval = 20 * time.Millisecond
	}})
	return &env{s: s, mailer: mailer}
}

func (e *env) put(t *testing.T, p auth.Principal, bucket, name string, body []byte) string {
	t.Helper()
	rec, err := e.s.Platform.Files.Put(context.Background(), &p, filestore.PutInput{Bucket: bucket, Type: "sample", Name: name, Body: bytes.NewReader(body)})
	if err != nil {
		t.Fatalf("put %s: %v", name, err)
	}
	return rec.ID
}

func (e *env) events(t *testing.T) []outbox.Record {
	t.Helper()
	var out []outbox.Record
	for _, typ := range []string{experts.EventQuestion, experts.EventGrainSample} {
		recs, err := outbox.List(context.Background(), e.s.Platform.DB, outbox.Filter{Type: typ, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
	return out
}

func refs(ids ...string) []map[string]any {
	out := make([]map[string]any, len(ids))
	for i, id := range ids {
		out[i] = map[string]any{"id": id}
	}
	return out
}

func paths(want ...string) func(t *testing.T, r *testkit.Response) {
	return func(t *testing.T, r *testkit.Response) {
		got := r.Error(t).Paths()
		sort.Strings(got)
		sort.Strings(want)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("validation paths %v, want %v: %s", got, want, r.Body)
		}
	}
}

func TestQuestions(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		e := newEnv(t, db)
		s := e.s
		tok := s.Token(ann)
		photo := e.put(t, ann, filestore.BucketImages, "yellow-leaves.png", pngBytes)
		sharedByCarl := e.put(t, carl, filestore.BucketFiles, "soil-test.pdf", pdfBytes)
		bobsFile := e.put(t, bob, filestore.BucketFiles, "bob.pdf", pdfBytes)
		archived := e.put(t, ann, filestore.BucketFiles, "old.pdf", pdfBytes)
		if err := s.Platform.Files.Archive(context.Background(), &ann, archived); err != nil {
			t.Fatal(err)
		}
		ask := func(body any) testkit.Request {
			return testkit.Request{Method: http.MethodPost, Path: "/system/v1/experts/questions", Token: tok, JSON: body}
		}
		var storedID string
		s.Run(t, []testkit.Scenario{
			{Name: "ask401", Req: testkit.Request{Method: http.MethodPost, Path: "/system/v1/experts/questions", JSON: map[string]any{"question": "q", "files": nil}}, Status: 401, Code: "unauthorized"},
			{Name: "ask400empty", Req: ask(map[string]any{}), Status: 400, Code: "validation_failed", Check: paths("question", "files")},
			{Name: "ask400tooLong", Req: ask(map[string]any{"question": strings.Repeat("a", 1001), "files": nil}), Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) {
					v := r.Error(t).Validation
					if len(v) != 1 || v[0].Path != "question" || v[0].Code != "max_length" || v[0].Data["max"] != float64(1000) {
						t.Fatalf("validation %+v", v)
					}
				}},
			{Name: "ask400blank", Req: ask(map[string]any{"question": "  \n ", "files": []any{}}), Status: 400, Code: "validation_failed", Check: paths("question")},
			{Name: "ask400questionType", Req: ask(map[string]any{"question": 12, "files": nil}), Status: 400, Code: "validation_failed", Check: paths("question")},
			{Name: "ask400filesType", Req: ask(map[string]any{"question": "q", "files": "photo.png"}), Status: 400, Code: "validation_failed", Check: paths("files")},
			{Name: "ask400filesEveryProblem", Req: ask(map[string]any{"question": strings.Repeat("b", 1001),
				"files": []map[string]any{{"id": photo}, {"id": bobsFile}, {"name": "no id"}, {"id": archived}, {"id": "nonexistent"}, {"id": photo}}}),
				Status: 400, Code: "validation_failed", Check: paths("question", "files[1].id", "files[2].id", "files[3].id", "files[4].id", "files[5].id")},
			{Name: "ask400tooManyFiles", Req: ask(map[string]any{"question": "q", "files": refs(strings.Split(strings.Repeat(photo+",", 21), ",")[:21]...)}),
				Status: 400, Code: "validation_failed", Check: paths("files")},
			{Name: "ask400malformed", Req: ask(`{"question": "q", "files": [`), Status: 400, Code: "bad_request"},
			{Name: "ask200exactly1000chars", Req: ask(map[string]any{"question": strings.Repeat("é", 1000), "files": nil}), Status: 200},
			{Name: "ask200withFiles", Req: ask(map[string]any{"question": "Why are the leaves of my winter wheat turning yellow?", "files": refs(photo, sharedByCarl)}), Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					m := r.Map(t)
					if m["status"] != "success" || m["id"] == "" {
						t.Fatalf("confirmation %s", r.Body)
					}
					storedID = m["id"].(string)
				}},
		})
		svc := newFeature(t, s)
		req, err := svc.Get(context.Background(), storedID)
		if err != nil {
			t.Fatal(err)
		}
		if req.Kind != experts.KindQuestion || req.Status != experts.StatusOpen || req.UserID != ann.UserID || req.OrganisationID != "org-farm" ||
			len(req.Files) != 2 || req.Files[0].Name != "yellow-leaves.png" || req.Files[1].UserID != carl.UserID || !strings.HasSuffix(req.Files[0].URL, "/system/v1/files/"+photo) {
			t.Fatalf("stored request %+v", req)
		}
		// Two questions were accepted: two notifications, nothing for the refused ones.
		events := e.events(t)
		if len(events) != 2 {
			t.Fatalf("%d expert events, want 2", len(events))
		}
		for _, ev := range events {
			if ev.Type != experts.EventQuestion || len(ev.RecipientList()) != 0 {
				t.Fatalf("event %+v", ev)
			}
		}
		// The app's dispatcher mails both to the experts' mailbox.
		mails := e.mailer.WaitMails(t, 2, 15*time.Second)
		var found bool
		for _, m := range mails {
			if strings.Join(m.To, ",") != "experts@agritrade.example" {
				t.Fatalf("expert mail went to %v", m.To)
			}
			found = found || strings.Contains(m.Data, "winter wheat") && strings.Contains(m.Data, "yellow-leaves.png")
		}
		if !found {
			t.Fatalf("no mail carries the question: %+v", mails)
		}
	})
}

func TestGrainSamples(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		e := newEnv(t, db)
		s := e.s
		tok := s.Token(ann)
		photo := e.put(t, ann, filestore.BucketImages, "sample.png", pngBytes)
		labSheet := e.put(t, ann, filestore.BucketFiles, "lab-sheet.pdf", pdfBytes)
		video := e.put(t, ann, filestore.BucketVideos, "sample.mp4", mp4Bytes)
		blob := e.put(t, ann, filestore.BucketFiles, "data.bin", binBytes)
		bobsPhoto := e.put(t, bob, filestore.BucketImages, "bob.png", pngBytes)
		send := func(body any) testkit.Request {
			return testkit.Request{Method: http.MethodPost, Path: "/system/v1/experts/grain-samples", Token: tok, JSON: body}
		}
		var id string
		s.Run(t, []testkit.Scenario{
			{Name: "sample401", Req: testkit.Request{Method: http.MethodPost, Path: "/system/v1/experts/grain-samples", JSON: map[string]any{"files": refs(photo)}}, Status: 401, Code: "unauthorized"},
			{Name: "sample400missing", Req: send(map[string]any{}), Status: 400, Code: "validation_failed", Check: paths("files")},
			{Name: "sample400null", Req: send(map[string]any{"files": nil}), Status: 400, Code: "validation_failed", Check: paths("files")},
			{Name: "sample400empty", Req: send(map[string]any{"files": []any{}}), Status: 400, Code: "validation_failed", Check: paths("files")},
			{Name: "sample400notImageOrDocument", Req: send(map[string]any{"files": refs(photo, video, blob)}), Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) {
					paths("files[1].id", "files[2].id")(t, r)
					for _, v := range r.Error(t).Validation {
						if v.Code != "file_type" {
							t.Fatalf("code %s", v.Code)
						}
					}
				}},
			{Name: "sample400unreadable", Req: send(map[string]any{"files": refs(labSheet, bobsPhoto)}), Status: 400, Code: "validation_failed", Check: paths("files[1].id")},
			{Name: "sample400duplicate", Req: send(map[string]any{"files": refs(photo, photo)}), Status: 400, Code: "validation_failed", Check: paths("files[1].id")},
			{Name: "sample200", Req: send(map[string]any{"files": refs(photo, labSheet)}), Status: 200, Check: func(t *testing.T, r *testkit.Response) { id = r.Map(t)["id"].(string) }},
		})
		// bob may read his own photo: for him it is fine.
		if r := s.Do(testkit.Request{Method: http.MethodPost, Path: "/system/v1/experts/grain-samples", Token: s.Token(bob), JSON: map[string]any{"files": refs(bobsPhoto)}}); r.Status != 200 {
			t.Fatalf("bob's sample: %d %s", r.Status, r.Body)
		}
		req, err := newFeature(t, s).Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if req.Kind != experts.KindGrainSample || req.Question != "" || len(req.Files) != 2 || req.Files[1].Name != "lab-sheet.pdf" {
			t.Fatalf("stored %+v", req)
		}
		events := e.events(t)
		if len(events) != 2 {
			t.Fatalf("%d events, want 2", len(events))
		}
		for _, ev := range events {
			if ev.Type != experts.EventGrainSample || !strings.Contains(ev.Data, `"kind":"grain-sample"`) {
				t.Fatalf("event %+v", ev)
			}
		}
	})
}

func TestIsImageOrDocument(t *testing.T) {
	for ct, want := range map[string]bool{
		"image/png": true, "image/jpeg": true, "image/heic": true, "application/pdf": true, "text/plain; charset=utf-8": true,
		"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": true, "application/vnd.oasis.opendocument.text": true,
		"video/mp4": false, "application/octet-stream": false, "application/zip": false, "text/html; charset=utf-8": false,
		"application/x-executable": false, "": false,
	} {
		if got := experts.IsImageOrDocument(ct); got != want {
			t.Errorf("%q: %v, want %v", ct, got, want)
		}
	}
}

// FuzzNewQuestion: any body shape gets an answer (no panic), and a draft of
// a body the binder accepts keeps the rules.
func FuzzNewQuestion(f *testing.F) {
	f.Add("Why yellow?", `null`)
	f.Add("", `[{"id":"x"}]`)
	f.Add(strings.Repeat("q", 1001), `"files"`)
	f.Add("q", `[{"id":1}]`)
	f.Fuzz(func(t *testing.T, question, files string) {
		q, _ := json.Marshal(question)
		var in experts.QuestionInput
		if fe, err := httpx.Decode([]byte(`{"question":`+string(q)+`,"files":`+files+`}`), &in); err != nil || !fe.Empty() {
			return // the binder's answer (tested in httpx)
		}
		d := experts.NewQuestion(in)
		if d.Fields.Empty() {
			if strings.TrimSpace(d.Question) == "" || len([]rune(d.Question)) > experts.MaxQuestionLen || len(d.Refs) > experts.MaxFiles {
				t.Fatalf("accepted %q with %d files", d.Question, len(d.Refs))
			}
		}
		var gin experts.GrainSampleInput
		if fe, err := httpx.Decode([]byte(`{"files":`+files+`}`), &gin); err != nil || !fe.Empty() {
			return
		}
		g := experts.NewGrainSample(gin)
		if g.Fields.Empty() && (len(g.Refs) == 0 || len(g.Refs) > experts.MaxFiles) {
			t.Fatalf("accepted a grain sample with %d files", len(g.Refs))
		}
	})
}

// newFeature builds the feature over the server's database and file store,
// for reading back what a request stored.
func newFeature(t *testing.T, s *testkit.Server) *experts.Feature {
	t.Helper()
	f, err := experts.New(experts.Deps{DB: s.Platform.DB, Files: s.Platform.Files})
	if err != nil {
		t.Fatal(err)
	}
	return f
}
