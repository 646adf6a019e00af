// Whether a support bundle is open read only (App.svelte sets it when the bundle opens or
// closes; the views then remount). While it is, every control that would change something is
// disabled with `READ_ONLY_REASON` (the host would answer `read_only` anyway).

/** The reason shown beside a control that cannot be used while a bundle is open. */
export const READ_ONLY_REASON = "read only: a support bundle is open";

/** `open`: a bundle is open and the views show it. */
export const bundleMode = $state({ open: false });

/** Requests from the File menu for a view that may not be mounted yet: `savePreview` asks
 * Settings' support bundle card to open its preview (it resets the flag when it does). */
export const menuRequests = $state({ savePreview: false });
