# shellcheck shell=bash
# Local images made from Debian packages (sourced, not run): used by
# scripts/build-images (the images sandboxes run in the tests) and
# scripts/build-server-image (the bases of the server's own image).
#
#   build_image TAG PACKAGES CHECK-CMD...
#
# mmdebstraps a bookworm rootfs with PACKAGES (comma-separated) from this
# machine's own apt sources, `docker import`s it, runs CHECK-CMD in it and
# only then tags it TAG, so that a half-built image is never mistaken for
# a cached one.  An image of TAG labelled with the same package list is
# kept (unless force=1).  Needs a function log.

build_image() {
	local tag=$1 pkgs=$2 id start size have
	shift 2
	if ((!${force:-0})) && have=$(docker image inspect \
		-f '{{index .Config.Labels "mcp-sandboxd.packages"}}' "$tag" 2>/dev/null); then
		if [[ $have == "$pkgs" ]]; then
			log "$tag: exists, skipping (use --force to rebuild)"
			return 0
		fi
		log "$tag: exists with packages '${have:-(unlabelled)}', rebuilding"
	fi
	start=$SECONDS
	log "$tag: mmdebstrap bookworm with $pkgs"
	id=$(mmdebstrap --variant=apt --include="$pkgs" bookworm - |
		docker import \
			--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
			--change 'ENV LANG=C.UTF-8' \
			--change "LABEL mcp-sandboxd.packages=$pkgs" - "$tag-unchecked")
	log "$tag: sanity check: $*"
	if ! docker run --rm --network none "$id" "$@" >&2; then
		log "$tag: sanity check failed; removing $id"
		docker rmi "$tag-unchecked" >/dev/null || true
		return 1
	fi
	docker tag "$id" "$tag"
	docker rmi "$tag-unchecked" >/dev/null # drops only the temporary tag
	size=$(docker image inspect -f '{{.Size}}' "$tag" | numfmt --to=si --round=nearest)
	log "$tag: built in $((SECONDS - start)) s, size $size"
}
