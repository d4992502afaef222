// BodyWalker's calls: DistArray members (each either modelled or conservative), helpers and
// lambdas walked with their parameters bound, and functions tessc cannot look into.
#include "body_walker.h"
#include "known_library.h"

#include <algorithm>
#include <optional>

#include "clang/AST/ExprCXX.h"
#include "clang/AST/StmtCXX.h"
#include "clang/AST/StmtOpenMP.h"

namespace tessera::compiler {

using namespace clang;  // NOLINT(build/namespaces): the file is all Clang AST code

namespace {

// While a library algorithm's callback is walked: where the elements of the ranges the algorithm
// was given live, so that the callback's reference parameters are bound there (a lambda over a
// row view's elements writes that row). Null: unknown.
const Place* g_callback_elements = nullptr;

}  // namespace

void BodyWalker::VisitOperatorCall(const CXXOperatorCallExpr* op, Use use) {
  const OverloadedOperatorKind k = op->getOperator();
  const auto* md = dyn_cast_or_null<CXXMethodDecl>(op->getDirectCallee());
  // A local lambda called as helper(...).
  if (k == OO_Call && md != nullptr && md->getParent()->isLambda()) {
    Value callee = Eval(op->getArg(0));
    if (callee.kind == Value::Kind::kLambda || isa<LambdaExpr>(Strip(op->getArg(0), ctx_)) ||
        isa<DeclRefExpr>(Strip(op->getArg(0), ctx_))) {
      Inline(md, op, /*first_arg=*/1);
      return;
    }
  }
  // A library function object on the list (a std::ranges algorithm, std::plus, a generator or
  // distribution): a library call like any other.
  if (k == OO_Call && md != nullptr && IsLibraryDecl(md, sm_)) {
    const LibraryVerdict verdict = ClassifyLibraryFunction(md);
    if (verdict.known) {
      VisitCall(op);
      return;
    }
    // Not a holder of some other callable (those below): the class's own reason.
    const StringRef cls = md->getParent()->getName();
    if (cls != "function" && cls != "move_only_function" && cls != "reference_wrapper" &&
        !cls.startswith("_Bind")) {
      Opaque(op->getBeginLoc(), verdict.why);
      Visit(op->getArg(0), Use::kRead);
      VisitUnknownCall(op, md, 1);
      return;
    }
  }
  // A callable object of a library type (std::function, std::reference_wrapper, a bind
  // expression): which function it holds is decided at run time.
  if (k == OO_Call && md != nullptr && (md->getBody() == nullptr || sm_.isInSystemHeader(md->getLocation()))) {
    Opaque(op->getBeginLoc(),
           "'" + Text(op->getArg(0)) + "' is called through a " +
               md->getParent()->getQualifiedNameAsString() +
               ": tessc cannot see which function it holds, so not what it reads and writes; "
               "call a lambda or function defined in this file directly (auto f = [&](...) "
               "{...}; f(...);)");
    VisitUnknownCall(op, md, 1);
    return;
  }
  // Overloaded assignment on an element of class type behaves like the builtin one.
  if (op->getNumArgs() == 2 && (k == OO_Equal || k == OO_PlusEqual || k == OO_MinusEqual ||
                                k == OO_StarEqual || k == OO_SlashEqual)) {
    Value lhs = Eval(op->getArg(0));
    if (lhs.kind == Value::Kind::kArray) {
      Visit(op->getArg(0), k == OO_Equal ? Use::kWrite
                           : (k == OO_PlusEqual || k == OO_MinusEqual) ? Use::kAdd
                                                                       : Use::kUpdate);
      Visit(op->getArg(1), Use::kRead);
      return;
    }
  }
  (void)use;
  VisitCall(op);
}

void BodyWalker::VisitCall(const CallExpr* call) {
  const FunctionDecl* fd = call->getDirectCallee();
  if (const auto* mc = dyn_cast<CXXMemberCallExpr>(call)) {
    const Expr* obj = mc->getImplicitObjectArgument();
    const TypeKind ok = obj != nullptr ? Classify(obj->getType()) : TypeKind::kOther;
    if (IsArrayLike(ok) && fd != nullptr) {
      VisitArrayMethod(mc, ok);
      return;
    }
  }
  if (fd == nullptr) {
    // A function pointer, a pointer to member, or a dependent callee.
    const Expr* callee = call->getCallee();
    Opaque(call->getBeginLoc(),
           "'" + Text(callee) +
               "' is called through a pointer: tessc cannot see which function runs, so not what "
               "it reads and writes; call a function or lambda defined in this file by name");
    if (callee != nullptr) Visit(callee, Use::kRead);
    VisitUnknownCall(call, nullptr, 0);
    return;
  }
  const auto* method = dyn_cast<CXXMethodDecl>(fd);
  // Virtual dispatch: the override that runs may be one tessc never sees.
  if (const auto* mc = dyn_cast<CXXMemberCallExpr>(call); mc != nullptr && method != nullptr &&
                                                          method->isVirtual()) {
    const auto* me = dyn_cast<MemberExpr>(mc->getCallee()->IgnoreParens());
    const bool qualified = me != nullptr && me->hasQualifier();
    const CXXMethodDecl* direct =
        qualified ? method
                  : method->getDevirtualizedMethod(mc->getImplicitObjectArgument(),
                                                   /*IsAppleKext=*/false);
    if (direct == nullptr) {
      Opaque(call->getBeginLoc(),
             "'" + method->getQualifiedNameAsString() +
                 "' is virtual: an override tessc cannot see (in another class or translation "
                 "unit) may run; mark the method or its class 'final', or call a non-virtual "
                 "function");
    } else {
      fd = direct;
      method = direct;
    }
  }
  const FunctionDecl* def = nullptr;
  const Stmt* body = fd->getBody(def);
  // Library code and the programming model are never walked: a call is allowed only if the
  // function is on the written-down list (known_library.h); anything else runs the site serially.
  const bool in_tessera = IsProgrammingModelDecl(fd, sm_);
  const bool trusted = in_tessera || IsLibraryDecl(fd, sm_) || fd->getBuiltinID() != 0;
  if (trusted && !IsCommutingAtomicUpdate(call, fd)) {
    const LibraryVerdict verdict =
        in_tessera ? ClassifyTesseraFunction(fd) : ClassifyLibraryFunction(fd);
    if (!verdict.known) Opaque(call->getBeginLoc(), verdict.why);
  }
  const unsigned first = isa<CXXOperatorCallExpr>(call) && method != nullptr ? 1 : 0;
  // The object of a member call: updated unless the method is const -- or, for a method tessc
  // walks, exactly what the walk finds written through `this`.
  const bool walked = body != nullptr && !trusted;
  Use object_use = method != nullptr && !method->isConst() && !method->isStatic() && !walked
                       ? Use::kUpdate
                       : Use::kRead;
  if (object_use == Use::kUpdate && IsCommutingAtomicUpdate(call, fd)) {
    const Expr* obj = isa<CXXMemberCallExpr>(call)
                          ? cast<CXXMemberCallExpr>(call)->getImplicitObjectArgument()
                          : call->getArg(0);
    // Updates commute only within one family: an add and a xor do not.
    const StringRef n = method->getName();
    const OverloadedOperatorKind k = method->getOverloadedOperator();
    const int family = n == "fetch_and" || k == OO_AmpEqual   ? 1
                       : n == "fetch_or" || k == OO_PipeEqual ? 2
                       : n == "fetch_xor" || k == OO_CaretEqual ? 3
                                                                : 0;
    atomic_families_.insert(family);
    if (atomic_families_.size() > 1) {
      Opaque(call->getBeginLoc(),
             "'" + Text(obj) + "' is a std::atomic updated by operations that do not commute with "
             "one another (add or subtract, and, or, xor are each only commutative among "
             "themselves): the final value depends on their order");
    }
    Note(call->getBeginLoc(),
         "'" + Text(obj) + "' is a std::atomic updated by commuting operations whose results are "
         "unused: race-free, with the serial final value in one process; under `tessera run` "
         "each worker has its own (for a sum over the job use a tessera::Accumulator)");
    object_use = Use::kRead;
  }
  if (const auto* mc = dyn_cast<CXXMemberCallExpr>(call)) {
    const Expr* obj = mc->getImplicitObjectArgument();
    if (obj != nullptr && obj->getType()->isPointerType()) {
      // p->f(): the object updated is the pointee.
      Visit(obj, Use::kRead);
      if (object_use == Use::kUpdate) {
        const Place p = PointeeOf(obj);
        if (p.kind == Place::Kind::kArray) {
          AddAccess(p.array, p.prefix, Use::kUpdate, obj->getBeginLoc(), "");
        } else if (p.kind != Place::Kind::kLocal) {
          Opaque(obj->getBeginLoc(), "'" + fd->getQualifiedNameAsString() +
                                         "' may change the object '" + Text(obj) +
                                         "' points to, " + p.what +
                                         ", which every iteration may share");
        }
      }
    } else {
      Visit(obj, object_use);
    }
  } else if (first == 1) {
    Visit(call->getArg(0), object_use);
  }
  // Functions and methods defined in this translation unit (outside system headers and the
  // programming model itself) are walked with their parameters bound; members they reach
  // through `this` resolve like any other member.
  if (body != nullptr && !trusted) {
    Inline(def, call, first);
    return;
  }
  if (!trusted) {
    Opaque(call->getBeginLoc(),
           "'" + fd->getQualifiedNameAsString() +
               "' is not defined in this translation unit: tessc cannot see what it reads and "
               "writes (arrays or other state it reaches, including through the objects it is "
               "called on); define it in this file or in a header the file includes");
  }
  VisitUnknownCall(call, fd, first);
}

void BodyWalker::VisitArrayMethod(const CXXMemberCallExpr* mc, TypeKind kind) {
  const StringRef name = mc->getMethodDecl()->getName();
  const Expr* obj = mc->getImplicitObjectArgument();
  const bool on_const = obj->getType().getNonReferenceType().isConstQualified() ||
                        mc->getMethodDecl()->isConst();
  if (name == "add" && (kind == TypeKind::kRelaxedArray || kind == TypeKind::kRelaxedRowView)) {
    Value base = Eval(obj);
    const unsigned n_index = mc->getNumArgs() - 1;
    if (base.kind == Value::Kind::kArray) {
      if (n_index == 1 && Eval(mc->getArg(0)).kind == Value::Kind::kKey) {
        for (int i = 0; i < model_.key_rank; ++i) {
          base.prefix.push_back(Affine::KeyComponent(model_.key_rank, i));
        }
      } else {
        for (unsigned i = 0; i < n_index; ++i) base.prefix.push_back(EvalSubscript(mc->getArg(i)));
      }
      AddAccess(base.array, base.prefix, Use::kAdd, mc->getBeginLoc(), "");
    }
    VisitObjectChain(obj);
    for (const Expr* a : mc->arguments()) Visit(a, Use::kRead);
    return;
  }
  if (name == "data" || name == "begin" || name == "end") {
    VisitEscape(obj, mc->getBeginLoc(), "'" + name.str() + "()' is called");
    return;
  }
  // Members that change an array's layout or make a new array: not safe on executor threads
  // (they rebuild the sparse index and the storage other iterations read) and, for the reorders,
  // a change of the serial order itself.
  static const char* const kLayout[] = {"insert", "append_unchecked", "reserve", "shuffle",
                                        "shuffle_blocks", "sort_keys", "permuted",
                                        "assign_permuted", "clone"};
  if (std::any_of(std::begin(kLayout), std::end(kLayout),
                  [&](const char* n) { return name == n; })) {
    Opaque(mc->getBeginLoc(),
           "'" + Text(obj) + "." + name.str() + "()' " +
               (name == "clone" || name == "permuted" ? "creates an array"
                                                      : "changes the layout of an array") +
               " inside a loop body, which is not safe on executor threads; do it before or "
               "after the loop (an element the loop writes must already be stored)");
  }
  if ((name == "find" || name == "contains") && mc->getNumArgs() == 1) {
    Value base = Eval(obj);
    if (base.kind == Value::Kind::kArray) {
      std::vector<Affine> key = EvalKeyArg(mc->getArg(0));
      base.prefix.insert(base.prefix.end(), key.begin(), key.end());
      CheckSparseLookup(base.array, base.prefix, mc->getBeginLoc(), name.str(), false);
    }
  }
  // Members that read only the shape, the stored keys or nothing: no element access. row()
  // and sparse_row() give views whose element accesses are recorded where they are used; find()
  // gives a pointer, followed the same way (body_places.cc).
  static const char* const kNoElementAccess[] = {
      "valid", "is_sparse", "shape", "extent", "rank", "size", "nnz", "context", "contains",
      "key_at", "staleness", "row", "find", "sparse_row", "operator()", "at", "get", "value_at"};
  const bool no_access = std::any_of(std::begin(kNoElementAccess), std::end(kNoElementAccess),
                                     [&](const char* n) { return name == n; });
  Value base = Eval(obj);
  if (no_access || base.kind != Value::Kind::kArray) {
    VisitObjectChain(obj);
    for (const Expr* a : mc->arguments()) Visit(a, Use::kRead);
    return;
  }
  const std::string array = model_.arrays[base.array].name;
  if (name == "fill") {
    AddAccess(base.array, base.prefix, Use::kWrite, mc->getBeginLoc(), "");
  } else if (name == "clone") {
    AddAccess(base.array, base.prefix, Use::kRead, mc->getBeginLoc(), "");
  } else {
    // insert, append_unchecked, reserve, shuffle, sort_keys, base(), ForEach...: they change or
    // hand out the array's storage as a whole.
    const std::string text = "'" + array + "." + name.str() + "()' " +
                             (on_const ? "reads" : "may read and write (or reorder)") +
                             " any element of '" + array +
                             "'; tessc counts it as an access to every element";
    Note(mc->getBeginLoc(), text);
    AddAccess(base.array, {}, on_const ? Use::kRead : Use::kEscape, mc->getBeginLoc(), text);
  }
  VisitObjectChain(obj);
  for (const Expr* a : mc->arguments()) Visit(a, Use::kRead);
}

bool BodyWalker::IsCommutingAtomicUpdate(const CallExpr* call, const FunctionDecl* fd) const {
  const auto* method = dyn_cast<CXXMethodDecl>(fd);
  if (method == nullptr || !InStdNamespace(method->getParent())) return false;
  const StringRef cls = method->getParent()->getName();
  if (cls != "atomic" && cls != "atomic_ref" && cls != "__atomic_base") return false;
  // Floating-point addition is not associative: the order of the updates shows in the result.
  if (const auto* spec = dyn_cast<ClassTemplateSpecializationDecl>(method->getParent());
      spec != nullptr && spec->getTemplateArgs().size() >= 1 &&
      spec->getTemplateArgs()[0].getKind() == TemplateArgument::Type &&
      spec->getTemplateArgs()[0].getAsType()->isFloatingType()) {
    return false;
  }
  if (discarded_.count(Strip(call, ctx_)) == 0) return false;
  const StringRef name = method->getName();
  const OverloadedOperatorKind k = method->getOverloadedOperator();
  return name == "fetch_add" || name == "fetch_sub" || name == "fetch_and" || name == "fetch_or" ||
         name == "fetch_xor" || k == OO_PlusPlus || k == OO_MinusMinus || k == OO_PlusEqual ||
         k == OO_MinusEqual || k == OO_AmpEqual || k == OO_PipeEqual || k == OO_CaretEqual;
}

bool BodyWalker::ReadsOnly(const FunctionDecl* fd) {
  static const char* const kReaders[] = {
      "accumulate", "inner_product", "reduce", "transform_reduce", "max_element", "min_element",
      "minmax_element", "find", "find_if", "count", "count_if", "equal", "all_of", "any_of",
      "none_of", "lower_bound", "upper_bound", "binary_search", "equal_range", "is_sorted",
      "mismatch", "search", "lexicographical_compare", "max", "min", "distance", "size"};
  const StringRef name = fd->getName();
  return std::any_of(std::begin(kReaders), std::end(kReaders),
                     [&](const char* n) { return name == n; });
}

void BodyWalker::VisitUnknownCall(const CallExpr* call, const FunctionDecl* fd, unsigned first) {
  const std::string fname = fd != nullptr ? fd->getQualifiedNameAsString() : "an indirect call";
  // A library function on the list: the ranges it is given are all it touches.
  const bool listed = fd != nullptr && IsLibraryDecl(fd, sm_) && ClassifyLibraryFunction(fd).known;
  const bool reads_only = listed && ClassifyLibraryFunction(fd).reads_only;
  std::optional<Place> elements;
  if (listed) {
    for (unsigned i = first; i < call->getNumArgs(); ++i) {
      const Expr* arg = call->getArg(i);
      const QualType at = arg->getType();
      if (isa<LambdaExpr>(Strip(arg, ctx_)) || isa<CXXDefaultArgExpr>(arg) ||
          at->isArithmeticType()) {
        continue;
      }
      // Callables (a lambda, a comparator, a projection) are not ranges.
      if (const CXXRecordDecl* rd = at->getAsCXXRecordDecl();
          rd != nullptr && rd->hasDefinition() && !IsIteratorLike(at) &&
          std::any_of(rd->method_begin(), rd->method_end(), [](const CXXMethodDecl* m) {
            return m->getOverloadedOperator() == OO_Call;
          })) {
        continue;
      }
      Place p = Place::Unknown(Text(arg));
      const Value v = Eval(arg);
      if (v.kind == Value::Kind::kArray) {
        p = {Place::Kind::kArray, v.array, v.prefix, ""};
      } else if (v.kind == Value::Kind::kInt || v.kind == Value::Kind::kKey) {
        continue;
      } else if (IsOwningContainer(at) && arg->isGLValue()) {
        p = RootOf(arg);
      } else if (at->isPointerType() || IsIteratorLike(at) || at->isRecordType()) {
        p = PointeeOf(arg);
      } else {
        continue;
      }
      if (!elements) {
        elements = p;
      } else if (elements->kind == Place::Kind::kArray && p.kind == Place::Kind::kArray &&
                 elements->array == p.array) {
        if (elements->prefix != p.prefix) elements->prefix.clear();
      } else if (elements->kind != p.kind || p.kind != Place::Kind::kLocal) {
        elements = Place::Unknown(Text(arg));
      }
    }
  }
  for (unsigned i = first; i < call->getNumArgs(); ++i) {
    const Expr* arg = call->getArg(i);
    if (isa<CXXDefaultArgExpr>(arg)) continue;
    QualType pt;
    if (fd != nullptr && i - first < fd->getNumParams()) pt = fd->getParamDecl(i - first)->getType();
    const bool mutable_param =
        !pt.isNull() && ((pt->isReferenceType() && !pt.getNonReferenceType().isConstQualified()) ||
                         (pt->isPointerType() && !pt->getPointeeType().isConstQualified()));
    // A row view's begin()/end()/data() handed to the standard library (std::fill,
    // std::inner_product, ...): an access to that row, read-only for algorithms that only read.
    if (const auto* mc = dyn_cast<CXXMemberCallExpr>(Strip(arg, ctx_));
        mc != nullptr && fd != nullptr && InStdNamespace(fd) &&
        sm_.isInSystemHeader(fd->getLocation())) {
      const StringRef m = mc->getMethodDecl()->getName();
      const Expr* obj = mc->getImplicitObjectArgument();
      if ((m == "begin" || m == "end" || m == "data") && obj != nullptr &&
          IsArrayLike(Classify(obj->getType()))) {
        Value row = Eval(obj);
        if (row.kind == Value::Kind::kArray && !row.prefix.empty()) {
          AddAccess(row.array, row.prefix, ReadsOnly(fd) ? Use::kRead : Use::kUpdate,
                    arg->getBeginLoc(), "");
          VisitObjectChain(obj);
          continue;
        }
      }
    }
    Value v = Eval(arg);
    if (v.kind == Value::Kind::kLambda || isa<LambdaExpr>(Strip(arg, ctx_))) {
      // A callback handed to code tessc cannot see may run any number of times: walk its body
      // once with its parameters unbound.
      const CXXMethodDecl* op = v.kind == Value::Kind::kLambda
                                    ? v.lambda_call
                                    : cast<LambdaExpr>(Strip(arg, ctx_))->getCallOperator();
      const Place* saved = g_callback_elements;
      g_callback_elements = elements ? &*elements : nullptr;
      WalkCallback(op);
      g_callback_elements = saved;
      continue;
    }
    // A lambda made elsewhere (before the loop, say) and passed by name: walked like one written
    // in the call. A generic one has no single body to walk.
    if (const CXXRecordDecl* closure = arg->getType().getNonReferenceType()->getAsCXXRecordDecl();
        closure != nullptr && closure->isLambda()) {
      if (closure->isGenericLambda() || closure->getLambdaCallOperator() == nullptr) {
        Opaque(arg->getBeginLoc(), "'" + Text(arg) + "' is a generic lambda passed by name to " +
                                       fname + "; tessc cannot tell which instantiation runs; "
                                       "write the lambda in the call");
      } else {
        const Place* saved = g_callback_elements;
        g_callback_elements = elements ? &*elements : nullptr;
        WalkCallback(closure->getLambdaCallOperator());
        g_callback_elements = saved;
      }
      continue;
    }
    if (v.kind == Value::Kind::kArray) {
      const int rank = model_.arrays[v.array].rank;
      if (static_cast<int>(v.prefix.size()) >= rank) {
        VisitElement(arg, mutable_param ? Use::kUpdate : Use::kRead);
        continue;
      }
      // A row view given as a range to a library algorithm on the list: that row.
      if (listed && !v.prefix.empty()) {
        AddAccess(v.array, v.prefix, reads_only ? Use::kRead : Use::kUpdate, arg->getBeginLoc(), "");
        VisitIndexArgumentsOf(arg);
        continue;
      }
      const std::string name = model_.arrays[v.array].name;
      const std::string text = "'" + name + "' is passed to " + fname +
                               ", whose body tessc cannot see; assuming it " +
                               (mutable_param || pt.isNull() ? "reads and writes" : "reads") +
                               " any element";
      Note(arg->getBeginLoc(), text);
      AddAccess(v.array, {}, mutable_param || pt.isNull() ? Use::kEscape : Use::kRead,
                arg->getBeginLoc(), text);
      if (!mutable_param && !pt.isNull()) {
        // Reads anywhere: make every subscript unknown.
        Access& a = model_.accesses.back();
        for (Affine& s : a.subscripts) s = Affine::Unknown();
      }
      VisitIndexArgumentsOf(arg);
      continue;
    }
    const QualType at = arg->getType();
    // Anything callable that is not a lambda tessc walks: it does not know what runs.
    if (at->isFunctionPointerType() || at->isMemberFunctionPointerType() ||
        (at->isRecordType() && !at->getAsCXXRecordDecl()->isLambda() &&
         at->getAsCXXRecordDecl()->hasDefinition() &&
         std::any_of(at->getAsCXXRecordDecl()->method_begin(),
                     at->getAsCXXRecordDecl()->method_end(), [](const CXXMethodDecl* m) {
                       return m->getOverloadedOperator() == OO_Call;
                     }) &&
         !InTesseraNamespace(at->getAsCXXRecordDecl()) &&
         !(IsLibraryDecl(at->getAsCXXRecordDecl(), sm_) &&
           ClassifyLibraryClass(at->getAsCXXRecordDecl()).known))) {
      Opaque(arg->getBeginLoc(), "'" + Text(arg) + "' is passed to " + fname +
                                     ", which may call it: tessc cannot see which function it "
                                     "holds; pass a lambda written in place");
      Visit(arg, Use::kRead);
      continue;
    }
    // What the callee may write through the argument: a non-const reference's referent, the
    // pointee of a pointer or iterator to non-const.
    const bool writes_referent = mutable_param && pt->isReferenceType();
    const bool pointer_like =
        at->isPointerType() || (at->isRecordType() && !IsOwningContainer(at) &&
                                !InTesseraNamespace(at->getAsCXXRecordDecl()));
    const bool pointee_const =
        at->isPointerType() ? at->getPointeeType().isConstQualified() : IteratorToConst(at);
    if (writes_referent && arg->isGLValue()) {
      CheckWrite(arg, Use::kUpdate, arg->getBeginLoc());
    } else if (pointer_like) {
      const Place p = at->isPointerType() || at->isRecordType() ? PointeeOf(arg) : Place::Local();
      if (p.kind == Place::Kind::kArray) {
        AddAccess(p.array, {}, pointee_const ? Use::kRead : Use::kEscape, arg->getBeginLoc(), "");
      } else if (!pointee_const && p.kind != Place::Kind::kLocal && at->isPointerType()) {
        Opaque(arg->getBeginLoc(), "'" + Text(arg) + "' is passed to " + fname +
                                       ", which may write through it into " + p.what +
                                       "; tessc cannot see that state (shared by all "
                                       "iterations, or untraceable)");
      } else if (!pointee_const && p.kind != Place::Kind::kLocal && !pt.isNull() &&
                 !pt->isReferenceType() && IsIteratorLike(at)) {
        Opaque(arg->getBeginLoc(), "'" + Text(arg) + "' is passed to " + fname +
                                       ", which may write through it into " + p.what +
                                       "; tessc cannot see that state (shared by all "
                                       "iterations, or untraceable)");
      } else if (p.kind == Place::Kind::kUnknown) {
        untraced_reads_.emplace_back(arg->getBeginLoc(),
                                     TypeName(at->isPointerType() ? at->getPointeeType() : at,
                                              ctx_) +
                                         "|" + Text(arg) + "|" + p.what);
      }
    }
    Visit(arg, Use::kRead);
  }
}

void BodyWalker::WalkCallback(const CXXMethodDecl* op) {
  if (op == nullptr) return;
  if (const FunctionTemplateDecl* ft = op->getDescribedFunctionTemplate()) {
    // A generic lambda: its instantiations are what runs.
    for (const FunctionDecl* spec : ft->specializations()) {
      if (const auto* m = dyn_cast<CXXMethodDecl>(spec)) WalkCallback(m);
    }
    return;
  }
  const Stmt* body = op->getBody();
  if (body == nullptr || inline_stack_.count(op) != 0) return;
  inline_stack_.insert(op);
  walked_.push_back(op);
  frames_.emplace_back();
  // Parameters: elements of the ranges the library was given, where tessc knows them.
  for (const ParmVarDecl* p : op->parameters()) {
    if (p->getType()->isReferenceType() || p->getType()->isPointerType()) {
      frames_.back()[p] = Value::Of(g_callback_elements != nullptr && p->getType()->isReferenceType()
                                        ? *g_callback_elements
                                        : Place::Unknown("'" + p->getNameAsString() + "'"));
    }
  }
  mutation_scopes_.push_back(body);
  Visit(body, Use::kNone);
  mutation_scopes_.pop_back();
  frames_.pop_back();
  walked_.pop_back();
  inline_stack_.erase(op);
}

BodyWalker::Frame BodyWalker::BindParams(const FunctionDecl* fd, const Expr* const* args,
                                         unsigned n, const Stmt* body) {
  Frame frame;
  for (unsigned i = 0; i < n; ++i) {
    if (i >= fd->getNumParams()) {
      Visit(args[i], Use::kRead);
      continue;
    }
    const ParmVarDecl* p = fd->getParamDecl(i);
    const Expr* arg = args[i];
    Value v = Eval(arg);
    QualType pt = p->getType();
    const TypeKind pk = Classify(pt);
    if (v.kind == Value::Kind::kArray &&
        (pt->isReferenceType() || pk == TypeKind::kRowView || pk == TypeKind::kRelaxedRowView)) {
      frame[p] = v;  // the callee accesses through it
      VisitIndexArgumentsOf(arg);
      continue;
    }
    if (v.kind == Value::Kind::kKey) {
      frame[p] = v;
      continue;
    }
    if (v.kind == Value::Kind::kLambda) {
      frame[p] = v;
      continue;
    }
    Visit(arg, Use::kRead);
    if (v.kind == Value::Kind::kInt &&
        (!pt->isReferenceType() || pt.getNonReferenceType().isConstQualified())) {
      frame[p] = v;
      continue;
    }
    // Where the callee may read or write through the parameter.
    if (pt->isReferenceType()) {
      frame[p] = Value::Of(RootOf(arg));
    } else if (pt->isPointerType() || pt->isRecordType()) {
      Place target = PointeeOf(arg);
      if (IsRepointed(p, body)) target = Place::Unknown("'" + p->getNameAsString() + "' (re-pointed)");
      if (IsStepped(p, body)) target.prefix.clear();
      frame[p] = Value::Of(std::move(target));
    }
  }
  // Parameters the helper modifies are not stable values.
  for (auto& [decl, value] : frame) {
    if ((value.kind == Value::Kind::kInt || value.kind == Value::Kind::kKey) &&
        MutatedIn(body, cast<VarDecl>(decl))) {
      value = Value();
    }
  }
  return frame;
}

void BodyWalker::VisitConstruct(const CXXConstructExpr* ce) {
  const CXXConstructorDecl* ctor = ce->getConstructor();
  const CXXRecordDecl* rd = ctor->getParent();
  const TypeKind kind = Classify(ce->getType());
  auto visit_args = [&] {
    for (unsigned i = 0; i < ce->getNumArgs(); ++i) {
      const Expr* arg = ce->getArg(i);
      const QualType pt = i < ctor->getNumParams() ? ctor->getParamDecl(i)->getType() : QualType();
      if (!pt.isNull() && pt->isReferenceType() && !pt.getNonReferenceType().isConstQualified() &&
          arg->isGLValue()) {
        Visit(arg, Use::kUpdate);  // moved from, or bound to a non-const reference member
      } else {
        Visit(arg, Use::kRead);
      }
    }
  };
  if (InTesseraNamespace(rd)) {
    // Keys are values; views and row entries are copies of a view (the accesses through them
    // are modelled where they are used). Arrays and accumulators register with the context.
    const bool view = kind == TypeKind::kRowView || kind == TypeKind::kRelaxedRowView ||
                      kind == TypeKind::kSparseRowView;
    if (kind != TypeKind::kKey && !view) {
      Opaque(ce->getBeginLoc(), "'" + rd->getQualifiedNameAsString() +
                                    "' is constructed inside a loop body, which is not safe on "
                                    "executor threads (the context registers it); construct it "
                                    "before the loop");
    } else if (view && !ctor->isCopyOrMoveConstructor()) {
      Opaque(ce->getBeginLoc(), "'" + rd->getQualifiedNameAsString() +
                                    "' is made from a pointer, so tessc cannot tell which "
                                    "elements it views; take a view with row(i) or sparse_row(i)");
    }
    visit_args();
    return;
  }
  if (IsLibraryDecl(rd, sm_)) {
    const LibraryVerdict verdict = ClassifyLibraryClass(rd);
    if (!verdict.known) Opaque(ce->getBeginLoc(), verdict.why);
    // A view over one row made from that row's data() and size() (PointeeOf proves it): its
    // accesses are recorded where it is used, so its pieces are no escape.
    const Place view = ce->getNumArgs() == 2 ? PointeeOf(ce) : Place::Local();
    if (view.kind == Place::Kind::kArray && !view.prefix.empty()) {
      for (const Expr* arg : ce->arguments()) {
        if (const auto* mc = dyn_cast<CXXMemberCallExpr>(Strip(arg, ctx_))) {
          VisitObjectChain(mc->getImplicitObjectArgument());
        }
      }
      return;
    }
    visit_args();
    return;
  }
  // A class of the program: its constructor (member initializers and body) and destructor run
  // here, walked like a helper on an object of this iteration.
  const FunctionDecl* def = nullptr;
  const Stmt* body = ctor->getBody(def);
  const CXXDestructorDecl* dtor = rd->hasDefinition() ? rd->getDestructor() : nullptr;
  const bool walk_ctor = ctor->isUserProvided() && body != nullptr;
  const bool walk_dtor = dtor != nullptr && dtor->isUserProvided() && dtor->hasBody();
  if (ctor->isUserProvided() && body == nullptr) {
    Opaque(ce->getBeginLoc(), "the constructor of '" + rd->getQualifiedNameAsString() +
                                  "' is not defined in this translation unit: tessc cannot see "
                                  "what it reads and writes; define it in this file or a header");
  }
  if (dtor != nullptr && dtor->isUserProvided() && !dtor->hasBody()) {
    Opaque(ce->getBeginLoc(), "the destructor of '" + rd->getQualifiedNameAsString() +
                                  "' is not defined in this translation unit: tessc cannot see "
                                  "what it reads and writes; define it in this file or a header");
  }
  if (!walk_ctor && !walk_dtor) {
    visit_args();
    return;
  }
  if (static_cast<int>(inline_stack_.size()) >= kMaxInlineDepth ||
      (walk_ctor && inline_stack_.count(ctor) != 0)) {
    Opaque(ce->getBeginLoc(), "the constructor of '" + rd->getQualifiedNameAsString() +
                                  "' is reached recursively (or too deep): tessc follows helpers "
                                  "only to a bounded depth");
    visit_args();
    return;
  }
  this_places_.push_back(Place::Local());
  call_stack_.push_back(ce->getBeginLoc());
  if (walk_ctor) {
    Frame frame = BindParams(ctor, ce->getArgs(), ce->getNumArgs(), body);
    inline_stack_.insert(ctor);
    walked_.push_back(ctor);
    frames_.push_back(std::move(frame));
    mutation_scopes_.push_back(body);
    if (const auto* c = dyn_cast<CXXConstructorDecl>(def)) {
      for (const CXXCtorInitializer* init : c->inits()) {
        if (init->isWritten()) Visit(init->getInit(), Use::kRead);
      }
    }
    Visit(body, Use::kNone);
    mutation_scopes_.pop_back();
    frames_.pop_back();
    walked_.pop_back();
    inline_stack_.erase(ctor);
  } else {
    visit_args();
  }
  if (walk_dtor && inline_stack_.count(dtor) == 0) {
    const Stmt* dbody = dtor->getBody();
    inline_stack_.insert(dtor);
    walked_.push_back(dtor);
    frames_.emplace_back();
    mutation_scopes_.push_back(dbody);
    Visit(dbody, Use::kNone);
    mutation_scopes_.pop_back();
    frames_.pop_back();
    walked_.pop_back();
    inline_stack_.erase(dtor);
  }
  call_stack_.pop_back();
  this_places_.pop_back();
}

void BodyWalker::Inline(const FunctionDecl* fd, const CallExpr* call, unsigned first) {
  const Stmt* body = fd != nullptr ? fd->getBody() : nullptr;
  if (body == nullptr || inline_stack_.count(fd) != 0 ||
      static_cast<int>(inline_stack_.size()) >= kMaxInlineDepth) {
    if (fd != nullptr && body != nullptr) {
      Opaque(call->getBeginLoc(),
             "'" + fd->getQualifiedNameAsString() + "' is called recursively (or more than " +
                 std::to_string(kMaxInlineDepth) +
                 " calls deep): tessc follows helpers only to a bounded depth; write the "
                 "recursion as a loop");
    }
    VisitUnknownCall(call, fd, first);
    return;
  }
  // `this` of a method (not of a lambda, whose `this` is the enclosing object's).
  const auto* method = dyn_cast<CXXMethodDecl>(fd);
  bool pushed_this = false;
  if (method != nullptr && !method->isStatic() && !method->getParent()->isLambda()) {
    Place self = Place::Unknown("the object '" + fd->getNameAsString() + "' is called on");
    if (const auto* mc = dyn_cast<CXXMemberCallExpr>(call)) {
      const Expr* obj = mc->getImplicitObjectArgument();
      if (obj != nullptr) self = obj->getType()->isPointerType() ? PointeeOf(obj) : RootOf(obj);
    } else if (first == 1 && call->getNumArgs() >= 1) {
      self = RootOf(call->getArg(0));
    }
    this_places_.push_back(self);
    pushed_this = true;
  }
  Frame frame = BindParams(fd, call->getArgs() + first, call->getNumArgs() - first, body);
  inline_stack_.insert(fd);
  walked_.push_back(fd);
  call_stack_.push_back(call->getBeginLoc());
  frames_.push_back(std::move(frame));
  mutation_scopes_.push_back(body);
  Visit(body, Use::kNone);
  mutation_scopes_.pop_back();
  frames_.pop_back();
  call_stack_.pop_back();
  walked_.pop_back();
  inline_stack_.erase(fd);
  if (pushed_this) this_places_.pop_back();
}

}  // namespace tessera::compiler
