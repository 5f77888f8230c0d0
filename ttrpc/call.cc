#include "ttrpc/call.h"

#include "ttrpc/server_connection_internal.h"

namespace hull::ttrpc {

bool ConnectionWatch::open() const {
  auto conn = conn_.lock();
  return conn != nullptr && conn->open();
}

Responder& Responder::operator=(Responder&& other) noexcept {
  if (this != &other) {
    if (pending_) Answer(InternalError("ttrpc: no reply"), {});
    conn_ = std::move(other.conn_);
    stream_id_ = other.stream_id_;
    session_ = other.session_;
    pending_ = std::exchange(other.pending_, false);
  }
  return *this;
}

Responder::~Responder() {
  if (pending_) Answer(InternalError("ttrpc: no reply"), {});
}

void Responder::Reply(std::string payload) {
  Answer(Status::Ok(), std::move(payload));
}

void Responder::Fail(Status status) {
  Answer(status, {});
}

bool Responder::active() const {
  if (!pending_) return false;
  auto conn = conn_.lock();
  return conn != nullptr && conn->Waiting(session_, stream_id_);
}

void Responder::Answer(const Status& status, std::string payload) {
  if (!pending_) return;
  pending_ = false;
  if (auto conn = conn_.lock()) conn->Answer(session_, stream_id_, status, std::move(payload));
}

}  // namespace hull::ttrpc
