package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"time"

	"github.com/agritrade/api/cmd/internal/buildinfo"
	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/ids"
	"github.com/agritrade/api/platform/logging"
	"github.com/spf13/cobra"
)

// The sample's people and organisations. The ids are fixed so that the tokens
// printed at the end keep working across restarts of the same installation.
var (
	demoFarmer = auth.Principal{UserID: "demo-farmer", Name: "Fiona Hughes", OrgID: "demo-org-hillfarm", OrgName: "Hill Farm Partnership", Orgs: []string{"demo-org-hillfarm"}}
	demoBuyer  = auth.Principal{UserID: "demo-buyer", Name: "Declan Byrne", OrgID: "demo-org-byrne", OrgName: "Byrne Livestock Ltd", Orgs: []string{"demo-org-byrne"}}
	demoHaul   = auth.Principal{UserID: "demo-haulier", Name: "Gareth Price", OrgID: "demo-org-haulage", OrgName: "Price Haulage", Orgs: []string{"demo-org-haulage"}}
	demoDriver = auth.Principal{UserID: "demo-driver", Name: "Tom Reilly", OrgID: "demo-org-haulage", OrgName: "Price Haulage", Orgs: []string{"demo-org-haulage"}, Roles: []string{auth.RoleDriver}}
	demoAdmin  = auth.Principal{UserID: "demo-admin", Name: "Ada Admin", OrgID: "demo-org-agritrade", OrgName: "AgriTrade", Roles: []string{auth.RoleAdmin}}
	// demoDocs is the farmer with the admin role: the one token with which
	// every example of /docs works (her loads, listings and conversations,
	// and the admin operations).
	demoDocs = auth.Principal{UserID: demoFarmer.UserID, Name: demoFarmer.Name, OrgID: demoFarmer.OrgID, OrgName: demoFarmer.OrgName, Orgs: demoFarmer.Orgs, Roles: []string{auth.RoleAdmin}}
)

func newDemo(f *rootFlags) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Fill an empty installation with a realistic sample across all modules, then print tokens to try it",
		Long: `demo migrates, then creates through the API itself (the same validation and rules as any client):
files, listings of every kind across GB and IE, loads in every state with hand-offs and proof of
delivery, a conversation about a listing and an expert question. It prints a token per sample user.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			p, err := openPlatform(ctx, f)
			if err != nil {
				return err
			}
			defer p.Close()
			// The sample's own requests are not worth a log line each.
			for _, name := range []string{app.PlatformName, "system", "logistics", "livestock"} {
				_ = p.Logs.Module(name).Apply(logging.Settings{Level: "warn"})
			}
			mods := buildModules(p)
			if err := p.MigrateUp(ctx, mods); err != nil {
				return err
			}
			srv, err := app.NewServer(p, buildinfo.Version, mods...)
			if err != nil {
				return err
			}
			runCtx, stop := context.WithCancel(ctx)
			var wg sync.WaitGroup
			if err := srv.Start(runCtx, &wg); err != nil {
				stop()
				return err
			}
			defer func() { stop(); wg.Wait() }()
			d := &demo{h: srv.Engine, secret: p.Auth.Secret(), out: cmd.OutOrStdout(), base: p.Config.BaseURL, fixedIDs: !force}
			if force {
				d.again = fmt.Sprintf("-%04x", time.Now().UnixNano()&0xffff)
			}
			if err := d.run(ctx, force); err != nil {
				return err
			}
			d.printTokens(p.Config.BaseURL)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "add the sample even when the installation already has one")
	return cmd
}

// demo drives the real engine in process.
type demo struct {
	h      http.Handler
	secret []byte
	out    io.Writer
	tokens map[string]string
	// signed is the signed URL of the last upload; tile that of a thumbnail.
	signed, tile string
	// id, when set, is the id the next request's new record gets (platform/ids).
	id string
	// fixedIDs: the sample gets its known ids (demo_ids.go); a second sample
	// (--force) gets fresh ones, the known ids being taken.
	fixedIDs bool
	// again suffixes what must be unique per organisation (load references)
	// in a second sample (--force), e.g. "-2a9f".
	again string
	base  string
}

// as fixes the id of the record the next request creates.
func (d *demo) as(id string) *demo {
	if d.fixedIDs {
		d.id = id
	}
	return d
}

// docsToken is the token for /docs: demoDocs shares the farmer's user id, so
// it is minted apart from the per-user cache.
func (d *demo) docsToken() string {
	t, err := auth.Mint(d.secret, auth.MintOptions{Principal: demoDocs, TTL: 30 * 24 * time.Hour})
	if err != nil {
		panic(err) // HS256 signing with a non-empty key does not fail
	}
	return t
}

func (d *demo) token(p auth.Principal) string {
	if d.tokens == nil {
		d.tokens = map[string]string{}
	}
	if t, ok := d.tokens[p.UserID]; ok {
		return t
	}
	t, err := auth.Mint(d.secret, auth.MintOptions{Principal: p, TTL: 30 * 24 * time.Hour})
	if err != nil {
		panic(err) // HS256 signing with a non-empty key does not fail
	}
	d.tokens[p.UserID] = t
	return t
}

// call sends a JSON request and decodes a 200 answer into out (may be nil).
func (d *demo) call(method, path string, who auth.Principal, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Authorization", "Bearer "+d.token(who))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return d.send(req, out)
}

func (d *demo) send(req *http.Request, out any) error {
	if d.id != "" {
		req = req.WithContext(ids.WithFixed(req.Context(), d.id))
		d.id = ""
	}
	rec := httptest.NewRecorder()
	d.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return fmt.Errorf("%s %s answered %d: %s", req.Method, req.URL.Path, rec.Code, rec.Body.String())
	}
	if out != nil {
		return json.Unmarshal(rec.Body.Bytes(), out)
	}
	return nil
}

// upload stores a file through the upload route and returns its reference.
func (d *demo) upload(who auth.Principal, bucket, typ, name string, content []byte) (map[string]any, error) {
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for k, v := range map[string]string{"bucket": bucket, "type": typ, "name": name, "organisationId": who.OrgID} {
		if err := w.WriteField(k, v); err != nil {
			return nil, err
		}
	}
	part, err := w.CreateFormFile("file", name)
	if err != nil {
		return nil, err
	}
	if _, err := part.Write(content); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	req := httptest.NewRequest(http.MethodPost, "/system/v1/files", &body)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+d.token(who))
	var rec struct {
		ID   string `json:"id"`
		Info struct {
			URL string `json:"url"`
		} `json:"info"`
	}
	if err := d.send(req, &rec); err != nil {
		return nil, err
	}
	d.signed = rec.Info.URL
	return map[string]any{"id": rec.ID}, nil
}

// photo draws a small PNG: a field-green picture with a band of colour, so
// that test fixtures are real images that pass the images bucket's sniffing.
func photo(band color.RGBA) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for y := 0; y < 48; y++ {
		for x := 0; x < 64; x++ {
			c := color.RGBA{R: 70, G: 140, B: 60, A: 255}
			if y > 30 {
				c = band
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}

// cameraPhoto draws a camera-sized JPEG (1600 x 1200): a sky fading to the
// horizon over a textured green field, with a band of colour (the animals,
// the crop) across it. The sample files are then real photos: they pass the
// images bucket's sniffing, and their thumbnails (?thumb=300x300) are what
// listing tiles show.
func cameraPhoto(band color.RGBA) []byte {
	const w, h = 1600, 1200
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	seed := uint32(band.R)<<16 | uint32(band.G)<<8 | uint32(band.B) | 1
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			seed ^= seed << 13
			seed ^= seed >> 17
			seed ^= seed << 5
			grain := byte(seed & 15)
			var c color.RGBA
			switch {
			case y < h*2/5: // sky, lighter towards the horizon
				t := byte(y * 120 / (h * 2 / 5) & 0xff)
				c = color.RGBA{R: 90 + t, G: 150 + t/2, B: 235, A: 255}
			case y > h*3/5 && y < h*4/5: // the band
				c = color.RGBA{R: band.R - band.R/16 + grain, G: band.G - band.G/16 + grain, B: band.B - band.B/16 + grain, A: 255}
			default: // grass
				c = color.RGBA{R: 60 + grain, G: 130 + 2*grain, B: 50 + grain, A: 255}
			}
			img.SetRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	_ = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85})
	return buf.Bytes()
}

func (d *demo) step(name string, fn func() (string, error)) error {
	what, err := fn()
	if err != nil {
		return fmt.Errorf("demo: %s: %w", name, err)
	}
	fmt.Fprintf(d.out, "  %-14s %s\n", name, what)
	return nil
}

func (d *demo) run(ctx context.Context, force bool) error {
	_ = ctx
	if !force {
		var page struct {
			TotalDocs int `json:"totalDocs"`
		}
		if err := d.call(http.MethodGet, "/system/v1/conversations?limit=1", demoFarmer, nil, &page); err != nil {
			return err
		}
		if page.TotalDocs > 0 {
			return fmt.Errorf("this installation already has the demo sample (run with --force to add another)")
		}
	}
	fmt.Fprintln(d.out, "Creating the demo sample:")
	steps := []struct {
		name string
		fn   func() (string, error)
	}{
		{"files", d.files},
		{"conversation", d.conversation},
		{"expert", d.expert},
	}
	steps = append(steps, d.moduleSteps()...)
	for _, s := range steps {
		if err := d.step(s.name, s.fn); err != nil {
			return err
		}
	}
	return nil
}

// demoFiles are the references the later steps attach.
var demoFiles = map[string]map[string]any{}

func (d *demo) files() (string, error) {
	for _, f := range []struct {
		key, name, id string
		who           auth.Principal
		band          color.RGBA
	}{
		{"spare", "old-ear-tags.jpg", demoFileSpare, demoFarmer, color.RGBA{R: 230, G: 200, B: 40, A: 255}},
		{"ticket", "weighbridge-ticket.jpg", demoFileTicket, demoDriver, color.RGBA{R: 250, G: 250, B: 250, A: 255}},
		{"sample", "wheat-sample.jpg", demoFileSample, demoFarmer, color.RGBA{R: 210, G: 170, B: 90, A: 255}},
		{"cattle", "angus-stores.jpg", demoFileCattle, demoFarmer, color.RGBA{R: 40, G: 30, B: 30, A: 255}},
		{"ewes", "texel-ewes.jpg", demoFileEwes, demoFarmer, color.RGBA{R: 235, G: 235, B: 225, A: 255}},
	} {
		typ := "image"
		if f.key == "ticket" {
			typ = "weighbridge"
		}
		if f.key == "sample" {
			typ = "sample"
		}
		ref, err := d.as(f.id).upload(f.who, "images", typ, f.name, cameraPhoto(f.band))
		if err != nil {
			return "", err
		}
		demoFiles[f.key] = ref
	}
	// The ewes' photo (uploaded last) as a listing tile: its signed URL with
	// a thumbnail size, asked once here so that it is made and stored.
	d.tile = d.signed + "&thumb=300x300"
	u, err := url.Parse(d.tile)
	if err != nil {
		return "", err
	}
	rec := httptest.NewRecorder()
	d.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u.RequestURI(), nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "image/jpeg" {
		return "", fmt.Errorf("the thumbnail of the ewes' photo answered %d %s: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}
	// Two resumable uploads left unfinished (tus): one to append to, one to
	// terminate. 1 MiB announced, nothing sent yet.
	for _, id := range []string{demoUploadAppend, demoUploadTerminate} {
		req := httptest.NewRequest(http.MethodPost, "/system/v1/uploads", nil)
		req.Header.Set("Authorization", "Bearer "+d.token(demoFarmer))
		req.Header.Set("Tus-Resumable", "1.0.0")
		req.Header.Set("Upload-Length", "1048576")
		req.Header.Set("Upload-Metadata", demoUploadMetadata)
		if d.fixedIDs {
			req = req.WithContext(ids.WithFixed(req.Context(), id))
		}
		rec := httptest.NewRecorder()
		d.h.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			return "", fmt.Errorf("POST /system/v1/uploads answered %d: %s", rec.Code, rec.Body.String())
		}
	}
	return fmt.Sprintf("%d photos uploaded (1600x1200 JPEG), a 300x300 thumbnail made, 2 resumable uploads begun", len(demoFiles)), nil
}

func (d *demo) conversation() (string, error) {
	var conv struct {
		ConversationID string `json:"conversationId"`
	}
	if err := d.as(demoConversation).call(http.MethodPost, "/system/v1/conversations", demoBuyer, map[string]any{
		"to": demoFarmer.UserID, "message": "Are the Texel ewes scanned, and could they go the week after next?",
		"title": "Texel ewes",
	}, &conv); err != nil {
		return "", err
	}
	if err := d.call(http.MethodPost, "/system/v1/conversations/"+conv.ConversationID+"/messages", demoFarmer, map[string]any{
		"to": demoBuyer.UserID, "message": "Scanned at 185%, yes. Collection from Builth Wells any weekday.",
	}, nil); err != nil {
		return "", err
	}
	return "buyer and farmer, 2 messages", nil
}

func (d *demo) expert() (string, error) {
	if err := d.call(http.MethodPost, "/system/v1/experts/questions", demoFarmer, map[string]any{
		"question": "Our Skyfall came in at 72 kg/hl after a wet harvest: is it still worth offering as milling?",
		"files":    []any{},
	}, nil); err != nil {
		return "", err
	}
	if err := d.call(http.MethodPost, "/system/v1/experts/grain-samples", demoFarmer, map[string]any{
		"files": []any{demoFiles["sample"]},
	}, nil); err != nil {
		return "", err
	}
	return "a question and a grain-sample request", nil
}

func (d *demo) printTokens(base string) {
	fmt.Fprintf(d.out, "\nTry it at %s/docs: Authorize with this token and every example there works as shown (valid 30 days):\n", base)
	fmt.Fprintf(d.out, "\n  %s (%s, %s) with the admin role\n  %s\n", demoDocs.Name, demoDocs.OrgName, demoDocs.UserID, d.docsToken())
	fmt.Fprintf(d.out, "\nThe sample's users, one token each:\n")
	for _, p := range []auth.Principal{demoFarmer, demoBuyer, demoHaul, demoDriver, demoAdmin} {
		fmt.Fprintf(d.out, "\n  %s (%s, %s)\n  %s\n", p.Name, p.OrgName, p.UserID, d.token(p))
	}
	if d.tile != "" {
		fmt.Fprintf(d.out, "\nA listing tile: the thumbnail of the Texel ewes' photo (signed URL, opens in a browser while the token lasts):\n  %s\n", d.tile)
	}
}
