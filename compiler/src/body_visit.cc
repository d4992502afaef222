// BodyWalker's statement walk: which array element each expression denotes and how it is used
// (read, written, updated additively, escaped); declarations bind locals, references and views.
#include "body_walker.h"

#include <algorithm>

#include "clang/AST/ExprCXX.h"
#include "clang/AST/StmtCXX.h"
#include "clang/AST/StmtOpenMP.h"

namespace tessera::compiler {

using namespace clang;  // NOLINT(build/namespaces): the file is all Clang AST code

bool BodyWalker::VisitElement(const Expr* e, Use use) {
  const Expr* s = Strip(e, ctx_);
  const bool candidate = isa<DeclRefExpr>(s) || isa<CXXOperatorCallExpr>(s) ||
                         isa<CXXMemberCallExpr>(s) || isa<UnaryOperator>(s);
  if (!candidate) return false;
  if (const auto* op = dyn_cast<CXXOperatorCallExpr>(s)) {
    if (op->getOperator() != OO_Call && op->getOperator() != OO_Subscript) return false;
  }
  if (const auto* mc = dyn_cast<CXXMemberCallExpr>(s)) {
    const CXXMethodDecl* md = mc->getMethodDecl();
    if (md == nullptr) return false;
    StringRef name = md->getName();
    if (name != "at" && name != "get" && name != "value_at") return false;
  }
  if (const auto* uo = dyn_cast<UnaryOperator>(s)) {
    if (uo->getOpcode() != UO_Deref) return false;
  }
  Value v = Eval(s);
  if (v.kind != Value::Kind::kArray) return false;
  if (static_cast<int>(v.prefix.size()) < model_.arrays[v.array].rank) return false;
  // A lookup by key (not through a row view or a position) may consult a sparse array's index.
  if (const auto* op = dyn_cast<CXXOperatorCallExpr>(s); op != nullptr && op->getOperator() == OO_Call) {
    if (Classify(op->getArg(0)->getType()) == TypeKind::kDistArray) {
      const auto* md = dyn_cast_or_null<CXXMethodDecl>(op->getCalleeDecl());
      CheckSparseLookup(v.array, v.prefix, s->getBeginLoc(), "operator()",
                        md == nullptr || !md->isConst());
    }
  } else if (const auto* mc = dyn_cast<CXXMemberCallExpr>(s)) {
    const StringRef name = mc->getMethodDecl()->getName();
    if ((name == "at" || name == "get") &&
        Classify(mc->getImplicitObjectArgument()->getType()) == TypeKind::kDistArray) {
      CheckSparseLookup(v.array, v.prefix, s->getBeginLoc(), name.str(),
                        name == "at" && !mc->getMethodDecl()->isConst());
    }
  }
  // `get` never writes and reads return by value for relaxed arrays.
  if (model_.arrays[v.array].relaxed && use != Use::kNone) use = Use::kRead;
  AddAccess(v.array, v.prefix, use, s->getBeginLoc(), "");
  VisitIndexArguments(s);
  return true;
}

void BodyWalker::VisitIndexArguments(const Expr* s) {
  if (const auto* op = dyn_cast<CXXOperatorCallExpr>(s)) {
    VisitObjectChain(op->getArg(0));
    for (unsigned i = 1; i < op->getNumArgs(); ++i) Visit(op->getArg(i), Use::kRead);
  } else if (const auto* mc = dyn_cast<CXXMemberCallExpr>(s)) {
    VisitObjectChain(mc->getImplicitObjectArgument());
    for (const Expr* a : mc->arguments()) Visit(a, Use::kRead);
  }
}

void BodyWalker::VisitObjectChain(const Expr* obj) {
  if (obj == nullptr) return;
  const Expr* s = Strip(obj, ctx_);
  if (const auto* mc = dyn_cast<CXXMemberCallExpr>(s)) {
    VisitObjectChain(mc->getImplicitObjectArgument());
    for (const Expr* a : mc->arguments()) Visit(a, Use::kRead);
  }
}

namespace {

// The statements and expressions the walk models. Everything else (inline assembly, coroutines,
// GNU extensions, ...) is outside tessc's understanding: the site runs serially.
bool IsModelled(const Stmt* st) {
  switch (st->getStmtClass()) {
    // Statements: control flow inside one iteration.
    case Stmt::CompoundStmtClass:
    case Stmt::DeclStmtClass:
    case Stmt::NullStmtClass:
    case Stmt::IfStmtClass:
    case Stmt::ForStmtClass:
    case Stmt::WhileStmtClass:
    case Stmt::DoStmtClass:
    case Stmt::CXXForRangeStmtClass:
    case Stmt::BreakStmtClass:
    case Stmt::ContinueStmtClass:
    case Stmt::ReturnStmtClass:
    case Stmt::SwitchStmtClass:
    case Stmt::CaseStmtClass:
    case Stmt::DefaultStmtClass:
    case Stmt::AttributedStmtClass:
    case Stmt::LabelStmtClass:
    case Stmt::GotoStmtClass:
    case Stmt::CapturedStmtClass:
    case Stmt::CXXTryStmtClass:
    case Stmt::CXXCatchStmtClass:
    // Expressions.
    case Stmt::DeclRefExprClass:
    case Stmt::IntegerLiteralClass:
    case Stmt::FloatingLiteralClass:
    case Stmt::CharacterLiteralClass:
    case Stmt::StringLiteralClass:
    case Stmt::CXXBoolLiteralExprClass:
    case Stmt::CXXNullPtrLiteralExprClass:
    case Stmt::ImplicitCastExprClass:
    case Stmt::CStyleCastExprClass:
    case Stmt::CXXStaticCastExprClass:
    case Stmt::CXXFunctionalCastExprClass:
    case Stmt::CXXConstCastExprClass:
    case Stmt::CXXReinterpretCastExprClass:
    case Stmt::CXXDynamicCastExprClass:
    case Stmt::BuiltinBitCastExprClass:
    case Stmt::ParenExprClass:
    case Stmt::ParenListExprClass:
    case Stmt::BinaryOperatorClass:
    case Stmt::CompoundAssignOperatorClass:
    case Stmt::UnaryOperatorClass:
    case Stmt::ConditionalOperatorClass:
    case Stmt::BinaryConditionalOperatorClass:
    case Stmt::CallExprClass:
    case Stmt::CXXMemberCallExprClass:
    case Stmt::CXXOperatorCallExprClass:
    case Stmt::UserDefinedLiteralClass:
    case Stmt::MemberExprClass:
    case Stmt::ArraySubscriptExprClass:
    case Stmt::CXXConstructExprClass:
    case Stmt::CXXTemporaryObjectExprClass:
    case Stmt::CXXInheritedCtorInitExprClass:
    case Stmt::MaterializeTemporaryExprClass:
    case Stmt::ExprWithCleanupsClass:
    case Stmt::CXXBindTemporaryExprClass:
    case Stmt::CXXDefaultArgExprClass:
    case Stmt::CXXDefaultInitExprClass:
    case Stmt::InitListExprClass:
    case Stmt::ImplicitValueInitExprClass:
    case Stmt::CXXScalarValueInitExprClass:
    case Stmt::CXXStdInitializerListExprClass:
    case Stmt::ArrayInitLoopExprClass:
    case Stmt::ArrayInitIndexExprClass:
    case Stmt::OpaqueValueExprClass:
    case Stmt::ConstantExprClass:
    case Stmt::SubstNonTypeTemplateParmExprClass:
    case Stmt::LambdaExprClass:
    case Stmt::CXXThisExprClass:
    case Stmt::UnaryExprOrTypeTraitExprClass:
    case Stmt::CXXNoexceptExprClass:
    case Stmt::CXXTypeidExprClass:
    case Stmt::PredefinedExprClass:
    case Stmt::SourceLocExprClass:
    case Stmt::TypeTraitExprClass:
    case Stmt::ConceptSpecializationExprClass:
    case Stmt::CXXRewrittenBinaryOperatorClass:
    case Stmt::CXXPseudoDestructorExprClass:
    case Stmt::CXXNewExprClass:
    case Stmt::CXXDeleteExprClass:
    case Stmt::CXXThrowExprClass:
      return true;
    default:
      return isa<OMPExecutableDirective>(st);
  }
}

}  // namespace

void BodyWalker::Visit(const Stmt* st, Use use) {
  if (st == nullptr) return;
  if (!IsModelled(st)) {
    Opaque(st->getBeginLoc(), std::string("tessc does not model a ") + st->getStmtClassName() +
                                  " in a loop body; write it with ordinary statements and calls");
    return;
  }
  if (const auto* te = dyn_cast<CXXThrowExpr>(st)) {
    Opaque(te->getBeginLoc(),
           "an exception thrown here may leave the iteration: iterations on other threads would "
           "already have run (or be running), unlike in the serial loop; return early or record "
           "the failure in a DistArray indexed by the key, and check it after the loop");
    Visit(te->getSubExpr(), Use::kRead);
    return;
  }
  if (const auto* ne = dyn_cast<CXXNewExpr>(st)) {
    // Allocation is thread-safe; a constructor runs like a call, placement into other storage
    // is a write tessc cannot trace.
    if (ne->getNumPlacementArgs() > 0) {
      Opaque(ne->getBeginLoc(), "placement new writes into storage tessc cannot trace; use a "
                                "local or a std::vector");
    }
    for (const Stmt* child : ne->children()) Visit(child, Use::kRead);
    return;
  }
  if (const auto* de = dyn_cast<CXXDeleteExpr>(st)) {
    Opaque(de->getBeginLoc(), "delete frees storage tessc cannot trace (it may be shared by "
                              "iterations); own per-iteration storage in a std::vector or "
                              "std::unique_ptr local to the body");
    Visit(de->getArgument(), Use::kRead);
    return;
  }
  if (const auto* e = dyn_cast<Expr>(st)) {
    VisitExpr(e, use);
    return;
  }
  if (const auto* cs = dyn_cast<CompoundStmt>(st)) {
    // Expression statements: their values are discarded (what an atomic counter needs).
    for (const Stmt* child : cs->body()) {
      if (const auto* e = dyn_cast<Expr>(child)) discarded_.insert(Strip(e, ctx_));
      Visit(child, Use::kRead);
    }
    return;
  }
  if (const auto* ds = dyn_cast<DeclStmt>(st)) {
    for (const Decl* d : ds->decls()) {
      if (const auto* vd = dyn_cast<VarDecl>(d)) VisitVarDecl(vd);
    }
    return;
  }
  if (const auto* fr = dyn_cast<CXXForRangeStmt>(st)) {
    VisitRangeFor(fr);
    return;
  }
  // `#pragma omp simd` and friends wrap the loop in a CapturedStmt, whose children() are only
  // the captured variables: walk the captured statement itself.
  if (const auto* omp = dyn_cast<OMPExecutableDirective>(st)) {
    if (omp->hasAssociatedStmt()) Visit(omp->getAssociatedStmt(), Use::kNone);
    return;
  }
  if (const auto* cs = dyn_cast<CapturedStmt>(st)) {
    Visit(cs->getCapturedStmt(), Use::kNone);
    return;
  }
  for (const Stmt* child : st->children()) Visit(child, Use::kRead);
}

void BodyWalker::VisitVarDecl(const VarDecl* vd) {
  if (!vd->hasInit()) return;
  const Expr* init = vd->getInit();
  // A static or thread_local variable is initialized once (per process or thread), by whichever
  // iteration comes first: its value is not this iteration's.
  if (vd->isStaticLocal() || vd->getTLSKind() != VarDecl::TLS_None) {
    Visit(init, Use::kRead);
    return;
  }
  QualType t = vd->getType();
  if (const auto* lambda = dyn_cast<LambdaExpr>(Strip(init, ctx_))) {
    Value v;
    v.kind = Value::Kind::kLambda;
    v.lambda_call = lambda->getCallOperator();
    frames_.back()[vd] = v;
    Visit(lambda, Use::kNone);  // its init-captures
    return;
  }
  Value v = Eval(init);
  const TypeKind kind = Classify(t);
  if (v.kind == Value::Kind::kArray &&
      (t->isReferenceType() || kind == TypeKind::kRowView || kind == TypeKind::kRelaxedRowView)) {
    // A reference or view: accesses happen where it is used. A view assigned later may name
    // another array: any of its type.
    frames_.back()[vd] =
        !t->isReferenceType() && IsMutatedInScope(vd) ? Wildcard(vd, vd->getLocation()) : v;
    VisitIndexArgumentsOf(init);
    return;
  }
  if (t->isPointerType()) {
    Visit(init, Use::kRead);  // &A(..) / w.data() are recorded as escapes there
    return;
  }
  if (IsArrayLike(kind) && t->isReferenceType()) {
    frames_.back()[vd] = Wildcard(vd, vd->getLocation());
    return;
  }
  if (kind == TypeKind::kKey && v.kind == Value::Kind::kKey) {
    // A copy of the loop's key is the key only while nothing changes it (`prev.idx[0] -= 1`,
    // passed by reference, ...); otherwise its components are unknown.
    if (t->isReferenceType() || !IsMutatedInScope(vd)) frames_.back()[vd] = v;
    return;
  }
  Visit(init, Use::kRead);
  if ((v.kind == Value::Kind::kInt || !v.why.empty()) && !IsMutatedInScope(vd)) {
    frames_.back()[vd] = v;
  }
}

void BodyWalker::VisitIndexArgumentsOf(const Expr* init) {
  const Expr* s = Strip(init, ctx_);
  VisitIndexArguments(s);
}

void BodyWalker::VisitRangeFor(const CXXForRangeStmt* fr) {
  const VarDecl* loop_var = fr->getLoopVariable();
  Value range = Eval(fr->getRangeInit());
  if (range.kind == Value::Kind::kArray) {
    VisitIndexArgumentsOf(fr->getRangeInit());
    const int rank = model_.arrays[range.array].rank;
    range.prefix.resize(rank, Affine::Unknown());
    if (loop_var->getType()->isReferenceType()) {
      frames_.back()[loop_var] = range;
    } else {
      AddAccess(range.array, range.prefix, Use::kRead, fr->getRangeInit()->getBeginLoc(), "");
    }
  } else {
    Visit(fr->getRangeInit(), Use::kRead);
  }
  Visit(fr->getBody(), Use::kNone);
}

void BodyWalker::VisitExpr(const Expr* e, Use use) {
  e = e->IgnoreParens();
  if (VisitElement(e, use)) return;
  // Storage that is not named as an array element: iteration-local, reached through a pointer
  // or reference, or shared (body_places.cc).
  if (e->isGLValue() && !IsArrayLike(Classify(e->getType())) &&
      Classify(e->getType()) != TypeKind::kSparseRowView &&
      !isa<AbstractConditionalOperator>(e) && !isa<BinaryOperator>(e)) {
    if (IsWriteUse(use) && !isa<ImplicitCastExpr>(e)) {
      CheckWrite(e, use, e->getBeginLoc());
    } else if (use == Use::kRead && IsIndirectLvalue(e)) {
      CheckIndirectRead(e);
    }
  }
  if (const auto* ice = dyn_cast<ImplicitCastExpr>(e)) {
    Visit(ice->getSubExpr(), use == Use::kNone ? Use::kRead : use);
    return;
  }
  if (const auto* cao = dyn_cast<CompoundAssignOperator>(e)) {
    const BinaryOperatorKind op = cao->getOpcode();
    Visit(cao->getLHS(), op == BO_AddAssign || op == BO_SubAssign ? Use::kAdd : Use::kUpdate);
    Visit(cao->getRHS(), Use::kRead);
    return;
  }
  if (const auto* bo = dyn_cast<BinaryOperator>(e)) {
    if (bo->getOpcode() == BO_Assign) {
      Visit(bo->getLHS(), Use::kWrite);
      Visit(bo->getRHS(), Use::kRead);
      return;
    }
    if (bo->getOpcode() == BO_Comma) {
      Visit(bo->getLHS(), Use::kNone);
      Visit(bo->getRHS(), use);
      return;
    }
    Visit(bo->getLHS(), Use::kRead);
    Visit(bo->getRHS(), Use::kRead);
    return;
  }
  if (const auto* uo = dyn_cast<UnaryOperator>(e)) {
    if (uo->isIncrementDecrementOp()) {
      Visit(uo->getSubExpr(), Use::kAdd);
      return;
    }
    if (uo->getOpcode() == UO_AddrOf) {
      VisitEscape(uo->getSubExpr(), uo->getBeginLoc(), "its address is taken");
      return;
    }
    Visit(uo->getSubExpr(), Use::kRead);
    return;
  }
  if (const auto* ce = dyn_cast<CXXConstructExpr>(e)) {
    VisitConstruct(ce);
    return;
  }
  // A default argument or member initializer is evaluated at the call (or construction).
  if (const auto* da = dyn_cast<CXXDefaultArgExpr>(e)) {
    Visit(da->getExpr(), use == Use::kNone ? Use::kRead : use);
    return;
  }
  if (const auto* di = dyn_cast<CXXDefaultInitExpr>(e)) {
    Visit(di->getExpr(), use == Use::kNone ? Use::kRead : use);
    return;
  }
  if (const auto* lambda = dyn_cast<LambdaExpr>(e)) {
    // The body is walked where the lambda is called; init-captures are evaluated here.
    for (const Expr* init : lambda->capture_inits()) {
      if (init != nullptr) Visit(init, Use::kRead);
    }
    return;
  }
  if (const auto* co = dyn_cast<AbstractConditionalOperator>(e)) {
    // `(c ? A(i) : B(j)) = x` writes whichever branch is taken.
    Visit(co->getCond(), Use::kRead);
    Visit(co->getTrueExpr(), use);
    Visit(co->getFalseExpr(), use);
    return;
  }
  if (const auto* op = dyn_cast<CXXOperatorCallExpr>(e)) {
    VisitOperatorCall(op, use);
    return;
  }
  if (const auto* call = dyn_cast<CallExpr>(e)) {
    VisitCall(call);
    return;
  }
  for (const Stmt* child : e->children()) Visit(child, Use::kRead);
}

void BodyWalker::VisitEscape(const Expr* e, SourceLocation loc, const std::string& why) {
  Value v = Eval(e);
  if (v.kind == Value::Kind::kArray) {
    const std::string name = model_.arrays[v.array].name;
    const std::string text = "a pointer into '" + name + "' escapes (" + why +
                             "); assuming any element of '" + name + "' is read and written";
    Note(loc, text);
    AddAccess(v.array, {}, Use::kEscape, loc, text);
    VisitIndexArgumentsOf(e);
    return;
  }
  Visit(e, Use::kRead);
}

}  // namespace tessera::compiler
