#!/bin/bash
# Installs ohio on this node: ohiod, ohioctl, libohio (library, C and C++ headers, pkg-config
# file), the MPI interposition libraries, Open MPI's collective component coll/ohio, the systemd
# unit, the default config (never over an existing one), the Slurm prolog example and the
# operations guide.
#
# usage: deploy/install.sh [--prefix DIR] [--sysconfdir DIR] [--unitdir DIR]
#                          [--openmpi-components DIR] [--from DIR]
#   --prefix DIR      where binaries, libraries, headers and docs go (default /usr/local)
#   --sysconfdir DIR  where ohio/ohiod.conf goes (default /etc for a prefix of /usr or
#                     /usr/local, else PREFIX/etc)
#   --unitdir DIR     where ohiod.service goes (default /etc/systemd/system for a prefix of
#                     /usr or /usr/local, else PREFIX/lib/systemd/system)
#   --openmpi-components DIR
#                     where mca_coll_ohio.so goes (default Open MPI's own component directory,
#                     `ompi_info --path pkglibdir`, for a prefix of /usr or /usr/local, where
#                     every Open MPI job finds it; else PREFIX/lib/openmpi, for jobs run with
#                     --mca mca_base_component_path; $HOME/.openmpi/components is searched too)
#   --from DIR        take the built files from DIR, laid out as bazel-bin (daemon/ohiod,
#                     client/ohioctl, client/libohio.so, ...); default: build them with Bazel
#
# Then: systemctl daemon-reload && systemctl enable --now ohiod && ohioctl health
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)

PREFIX=/usr/local
SYSCONFDIR=
UNITDIR=
OMPI_COMPONENTS=
FROM=
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) PREFIX=$2; shift 2 ;;
    --prefix=*) PREFIX=${1#*=}; shift ;;
    --sysconfdir) SYSCONFDIR=$2; shift 2 ;;
    --sysconfdir=*) SYSCONFDIR=${1#*=}; shift ;;
    --unitdir) UNITDIR=$2; shift 2 ;;
    --unitdir=*) UNITDIR=${1#*=}; shift ;;
    --from) FROM=$2; shift 2 ;;
    --from=*) FROM=${1#*=}; shift ;;
    --openmpi-components) OMPI_COMPONENTS=$2; shift 2 ;;
    --openmpi-components=*) OMPI_COMPONENTS=${1#*=}; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$PREFIX" in
  /*) ;;
  *) echo "install.sh: --prefix must be an absolute path, got '$PREFIX'" >&2; exit 2 ;;
esac
PREFIX=${PREFIX%/}
case "$PREFIX" in
  /usr|/usr/local) system_prefix=true ;;
  *) system_prefix=false ;;
esac
if [ -z "$SYSCONFDIR" ]; then
  if $system_prefix; then SYSCONFDIR=/etc; else SYSCONFDIR=$PREFIX/etc; fi
fi
if [ -z "$UNITDIR" ]; then
  if $system_prefix; then UNITDIR=/etc/systemd/system; else UNITDIR=$PREFIX/lib/systemd/system; fi
fi

if [ -z "$OMPI_COMPONENTS" ]; then
  if $system_prefix && command -v ompi_info > /dev/null; then
    OMPI_COMPONENTS=$(ompi_info --path pkglibdir | sed -n 's/^ *Pkglibdir: *//p')
  fi
  [ -n "$OMPI_COMPONENTS" ] || OMPI_COMPONENTS=$PREFIX/lib/openmpi
fi

MPI_LIBS=(client/libohio_mpi_openmpi.so client/libohio_mpi_mpich.so)
OMPI_COMPONENT=client/openmpi_coll/mca_coll_ohio.so
if [ -z "$FROM" ]; then
  (cd "$SRC" && bazel build --curses=no //daemon:ohiod //client:ohioctl //client:libohio.so \
    //client:libohio_mpi_openmpi.so //client:libohio_mpi_mpich.so //client/openmpi_coll:mca_coll_ohio.so)
  FROM=$(cd "$SRC" && bazel info bazel-bin 2>/dev/null)
fi
for f in daemon/ohiod client/ohioctl client/libohio.so; do
  [ -f "$FROM/$f" ] || { echo "install.sh: $FROM/$f is missing (build it, or fix --from)" >&2; exit 1; }
done

CONF=$SYSCONFDIR/ohio/ohiod.conf
DOCDIR=$PREFIX/share/doc/ohio
install -d "$PREFIX/sbin" "$PREFIX/bin" "$PREFIX/lib/pkgconfig" "$PREFIX/include/ohio" "$PREFIX/share/ohio" \
  "$DOCDIR" "$UNITDIR" "$SYSCONFDIR/ohio"

install -m 0755 "$FROM/daemon/ohiod" "$PREFIX/sbin/ohiod"
install -m 0755 "$FROM/client/ohioctl" "$PREFIX/bin/ohioctl"
install -m 0755 "$FROM/client/libohio.so" "$PREFIX/lib/libohio.so"
for lib in "${MPI_LIBS[@]}"; do
  if [ -f "$FROM/$lib" ]; then
    install -m 0755 "$FROM/$lib" "$PREFIX/lib/$(basename "$lib")"
  else
    echo "install.sh: $(basename "$lib") not built, not installed"
  fi
done
# Open MPI loads every mca_coll_*.so of its component path; the name is the component's.
if [ -f "$FROM/$OMPI_COMPONENT" ]; then
  install -d "$OMPI_COMPONENTS"
  install -m 0755 "$FROM/$OMPI_COMPONENT" "$OMPI_COMPONENTS/mca_coll_ohio.so"
  echo "install.sh: Open MPI's component coll/ohio in $OMPI_COMPONENTS"
else
  echo "install.sh: mca_coll_ohio.so not built, not installed"
fi

# The headers include each other by their place in the source tree; installed, they sit side by side.
install -m 0644 "$SRC/client/libohio/ohio.h" "$PREFIX/include/ohio/ohio.h"
sed 's|#include "client/libohio/ohio.h"|#include "ohio.h"|' "$SRC/client/libohio/ohio.hpp" > "$PREFIX/include/ohio/ohio.hpp"
chmod 0644 "$PREFIX/include/ohio/ohio.hpp"
cat > "$PREFIX/lib/pkgconfig/ohio.pc" <<EOF
prefix=$PREFIX
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: ohio
Description: client library of ohiod, the node-level alltoall daemon
Version: $(sed -n 's/.*kVersion\[\] = "\(.*\)";/\1/p' "$SRC/common/version.h")
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lohio
Cflags: -I\${includedir}/ohio
EOF

sed -e "s|/usr/local/sbin/ohiod|$PREFIX/sbin/ohiod|" \
    -e "s|/usr/local/share/doc/ohio|$DOCDIR|" \
    -e "s|/etc/ohio/ohiod.conf|$CONF|" \
    "$SRC/deploy/ohiod.service" > "$UNITDIR/ohiod.service"
chmod 0644 "$UNITDIR/ohiod.service"

# An admin's config is theirs: the new default goes beside it.
if [ -e "$CONF" ]; then
  install -m 0644 "$SRC/deploy/ohiod.conf" "$CONF.dist"
  echo "install.sh: kept $CONF; the default config is in $CONF.dist"
else
  install -m 0644 "$SRC/deploy/ohiod.conf" "$CONF"
fi

sed "s|/usr/local/bin/ohioctl|$PREFIX/bin/ohioctl|" "$SRC/deploy/slurm-prolog.sh" > "$PREFIX/share/ohio/slurm-prolog.sh"
chmod 0755 "$PREFIX/share/ohio/slurm-prolog.sh"
install -m 0644 "$SRC/docs/OPERATIONS.md" "$DOCDIR/OPERATIONS.md"
install -m 0644 "$SRC/docs/SECURITY.md" "$DOCDIR/SECURITY.md"  # OPERATIONS.md refers to it

echo "install.sh: installed under $PREFIX (config $CONF, unit $UNITDIR/ohiod.service)"
if $system_prefix && [ "$UNITDIR" = /etc/systemd/system ]; then
  echo "next: systemctl daemon-reload && systemctl enable --now ohiod && ohioctl health"
fi
