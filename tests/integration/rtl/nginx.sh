# tests/integration/rtl/nginx.sh: a real nginx (Debian's) serving a folder on
# loopback for the rtl pull tests and make bench. Sourced after tests/lib.sh
# (or with T set to a scratch folder).
#
# ngx_start DOCROOT   starts nginx (one process: master_process off) on
#                     127.0.0.1 at a free port, with its own configuration,
#                     logs and temporary folders under $T/nginx; sets NGX_URL
#                     and NGX_PID. Calling it again (after ngx_kill) restarts
#                     on the same port. Returns non-zero when nginx does not
#                     listen within 5 s (the reason is in $T/nginx/error.log).
#                     NGX_SNDBUF (e.g. 32k) sets the socket send buffer, so that
#                     a kill cuts a transfer short instead of the kernel still
#                     delivering megabytes the server had queued (it slows
#                     nginx down: not for benchmarks).
#                     NGX_TLS=1 serves https:// with a certificate made for
#                     127.0.0.1 at the first start ($T/nginx/cert.pem, for
#                     --cacert; needs openssl).
# ngx_kill            SIGKILL (the server dies mid-transfer, as a crash or a
#                     power cut of the server would)
# ngx_stop            stops it if it runs (every test traps this on EXIT)
#                     $NGX_URL/slow/ serves the same folder at 200 bytes/s
#                     after the first 64 KiB of each file; $NGX_URL/drip/ at
#                     8 KiB/s from the first byte.
# ngx_bytes PATTERN   sum of the body bytes nginx logged for request URIs
#                     matching the extended regex PATTERN (completed
#                     requests only: a killed server logs nothing)
# ngx_log_reset       empties the access log
NGX_BIN=$(command -v nginx || echo /usr/sbin/nginx)
NGX_PORT=
NGX_PID=

_ngx_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

ngx_start() {
    local root=$1 d=$T/nginx tries
    mkdir -p "$d/tmp"
    local scheme=http tls=''
    if [ "${NGX_TLS:-0}" = 1 ]; then
        scheme=https tls=" ssl"
        [ -f "$d/cert.pem" ] || openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
            -addext subjectAltName=IP:127.0.0.1 -keyout "$d/key.pem" -out "$d/cert.pem" >/dev/null 2>&1 || return 1
    fi
    for tries in 1 2 3 4 5; do
        [ -n "$NGX_PORT" ] || NGX_PORT=$(_ngx_free_port)
        cat >"$d/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
error_log $d/error.log;
pid $d/nginx.pid;
events { worker_connections 64; }
http {
    log_format ota '\$request_uri \$status \$body_bytes_sent "\$http_range"';
    access_log $d/access.log ota;
    client_body_temp_path $d/tmp/body;
    proxy_temp_path $d/tmp/proxy;
    fastcgi_temp_path $d/tmp/fastcgi;
    uwsgi_temp_path $d/tmp/uwsgi;
    scgi_temp_path $d/tmp/scgi;
    types { application/octet-stream zst; application/json json; }
    default_type application/octet-stream;
    keepalive_timeout 10s;
    sendfile on;
    server {
        listen 127.0.0.1:$NGX_PORT$tls${NGX_SNDBUF:+ sndbuf=$NGX_SNDBUF};
$([ -n "$tls" ] && printf '        ssl_certificate %s;\n        ssl_certificate_key %s;\n' "$d/cert.pem" "$d/key.pem")
        root $root;
        location / { autoindex off; }
        # the same folder, dripping: full speed for 64 KiB, then 200 bytes/s
        location /slow/ { alias $root/; limit_rate_after 64k; limit_rate 200; }
        # the same folder at a steady 8 KiB/s: above any stall limit, below a deadline's rate
        location /drip/ { alias $root/; limit_rate 8k; }
    }
}
EOF
        "$NGX_BIN" -e "$d/error.log" -c "$d/nginx.conf" -p "$d" >>"$d/stderr.log" 2>&1 &
        NGX_PID=$!
        local i
        for i in $(seq 50); do
            if curl -sk -o /dev/null --max-time 1 "$scheme://127.0.0.1:$NGX_PORT/"; then
                NGX_URL=$scheme://127.0.0.1:$NGX_PORT
                return 0
            fi
            kill -0 "$NGX_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$NGX_PID" 2>/dev/null; wait "$NGX_PID" 2>/dev/null
        NGX_PID=
        grep -q "Address already in use" "$d/error.log" "$d/stderr.log" 2>/dev/null && NGX_PORT=
    done
    return 1
}

ngx_kill() {
    [ -n "$NGX_PID" ] || return 0
    kill -9 "$NGX_PID" 2>/dev/null; wait "$NGX_PID" 2>/dev/null
    NGX_PID=
}

ngx_stop() {
    [ -n "$NGX_PID" ] || return 0
    kill "$NGX_PID" 2>/dev/null; wait "$NGX_PID" 2>/dev/null
    NGX_PID=
}

ngx_bytes() {
    awk -v pat="$1" '$1 ~ pat { s += $3 } END { print s + 0 }' "$T/nginx/access.log" 2>/dev/null || echo 0
}

ngx_log_reset() { : >"$T/nginx/access.log"; }
