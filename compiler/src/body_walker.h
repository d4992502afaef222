// BodyWalker: the small abstract interpreter behind CollectSite. It walks a parallel_for body
// and turns every DistArray access into an Access with affine subscripts; locals, references, row
// views, Key copies and parameters of inlined helpers are bound to symbolic values; it never
// guesses. Whatever may reach array storage but cannot be followed becomes an access with unknown
// subscripts plus a note, and whatever may reach other shared state, or code tessc cannot see,
// becomes a reason for the site to run serially.
//
// The class is split by concern: body_walker.cc (frame and bookkeeping), body_values.cc (symbolic
// values, aliases), body_visit.cc (statements and expressions), body_calls.cc (calls),
// body_places.cc (storage of lvalues and pointers; shared state; opaque code).
// Private to tessera_compiler (compiled with -fno-rtti like Clang itself).
#ifndef TESSERA_COMPILER_SRC_BODY_WALKER_H_
#define TESSERA_COMPILER_SRC_BODY_WALKER_H_

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "access_collector.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Analysis/Analyses/ExprMutationAnalyzer.h"
#include "clang/Basic/SourceManager.h"
#include "clang_util.h"
#include "llvm/ADT/DenseMap.h"

namespace tessera::compiler {

using clang::ASTContext;
using clang::CallExpr;
using clang::CXXForRangeStmt;
using clang::CXXMemberCallExpr;
using clang::CXXMethodDecl;
using clang::CXXOperatorCallExpr;
using clang::Decl;
using clang::DeclRefExpr;
using clang::Expr;
using clang::ExprMutationAnalyzer;
using clang::FunctionDecl;
using clang::ParmVarDecl;
using clang::QualType;
using clang::SourceLocation;
using clang::SourceManager;
using clang::Stmt;
using clang::ValueDecl;
using clang::VarDecl;

constexpr int kMaxInlineDepth = 16;

// Where the storage an lvalue denotes (or a pointer points into) lives.
struct Place {
  enum class Kind {
    kLocal,    // one iteration's own storage (locals, temporaries)
    kArray,    // storage of a DistArray: `array`, with the leading subscripts `prefix`
    kShared,   // state outside the loop body that every iteration sees (`what` names it)
    kUnknown,  // tessc cannot tell (`what` names the expression); may be array storage
  };
  Kind kind = Kind::kUnknown;
  int array = -1;
  std::vector<Affine> prefix;
  std::string what;

  static Place Local() { return {Kind::kLocal, -1, {}, ""}; }
  static Place Shared(std::string w) { return {Kind::kShared, -1, {}, std::move(w)}; }
  static Place Unknown(std::string w) { return {Kind::kUnknown, -1, {}, std::move(w)}; }
};

// A symbolic value bound to a variable or produced by an expression.
struct Value {
  enum class Kind { kUnknown, kInt, kKey, kArray, kLambda, kPlace };
  Kind kind = Kind::kUnknown;
  Affine affine;                     // kInt
  int array = -1;                    // kArray: index in SiteModel::arrays
  std::vector<Affine> prefix;        // kArray: leading subscripts already fixed (row view, element)
  const CXXMethodDecl* lambda_call = nullptr;  // kLambda
  // kPlace: a reference parameter's referent, or a pointer / view parameter's pointee.
  std::shared_ptr<Place> place;
  // kUnknown: why an integer is not affine in the key, told when it is used as a subscript.
  std::string why;

  static Value Int(Affine a) {
    Value v;
    v.kind = a.known() ? Kind::kInt : Kind::kUnknown;
    v.affine = std::move(a);
    return v;
  }
  static Value Of(Place p) {
    Value v;
    v.kind = Kind::kPlace;
    v.place = std::make_shared<Place>(std::move(p));
    return v;
  }
};

// How an access expression is used by its context.
enum class Use { kNone, kRead, kWrite, kUpdate, kAdd, kEscape };

inline bool IsWriteUse(Use u) {
  return u == Use::kWrite || u == Use::kUpdate || u == Use::kAdd || u == Use::kEscape;
}

class BodyWalker {
 public:
  BodyWalker(ASTContext& ctx, const CallIndex& calls, CollectedSite* out)
      : ctx_(ctx), sm_(ctx.getSourceManager()), calls_(calls), out_(out),
        model_(out->result.model) {}

  // `op`: the lambda's call operator as instantiated for this loop (for a generic lambda, the
  // specialization, whose body is not type-dependent).
  void Run(const CallExpr* call, const CXXMethodDecl* op, const ValueDecl* space_decl,
           int space_array, const FunctionDecl* enclosing);

  // The array the iteration-space expression denotes (through references too).
  int ResolveSpace(const Expr* space, const ValueDecl* decl);

  // Registers (or finds) the array named by `decl`.
  int ArrayId(const ValueDecl* decl);

  int NewArray(const std::string& name, QualType type, const ValueDecl* decl);

 private:
  using Frame = llvm::DenseMap<const Decl*, Value>;

  // ---- conservative bookkeeping --------------------------------------------------------------

  void Note(SourceLocation loc, std::string text);

  std::optional<int> RelaxedStaleness(const ValueDecl* decl);

  // ---- recording -----------------------------------------------------------------------------

  void AddAccess(int array, std::vector<Affine> subs, Use use, SourceLocation loc,
                 const std::string& reason);

  // ---- values --------------------------------------------------------------------------------

  const Value* Lookup(const Decl* d) const;

  // True unless every use of the pointer `vd` in `s` only reads its value (an lvalue-to-rvalue
  // conversion, or a lambda capture whose body is checked too). Assignments, ++, &p, binding to a
  // reference or passing by reference all count as "may be re-pointed".
  static bool IsReassigned(const ValueDecl* vd, const Stmt* s, const Stmt* parent = nullptr);

  bool IsMutatedInScope(const VarDecl* vd);

  // How a variable is used in a statement: only read, certainly written (assigned, ++/--), or
  // something in between (passed or bound by reference, ...), which needs Clang's analysis.
  enum class Uses { kReadOnly, kWritten, kUnclear };

  static Uses ClassifyUses(const VarDecl* vd, const Stmt* s, const Stmt* parent = nullptr);

  bool MutatedIn(const Stmt* scope, const VarDecl* vd);

  // One analyzer per scope: it memoizes its (matcher-based, not cheap) answers.
  ExprMutationAnalyzer& Mutations(const Stmt* scope);

  // The symbolic value of an integer, Key, array, row view or element expression.
  Value Eval(const Expr* e, int depth = 0);
  Value EvalImpl(const Expr* e, int depth);

  Affine EvalInt(const Expr* e, int depth = 0);
  // EvalInt for an array subscript: when it is not affine, a note says why (Value::why).
  Affine EvalSubscript(const Expr* e, int depth = 0);

  Value EvalDeclRef(const DeclRefExpr* dre, int depth);

  bool IsInside(const Decl* d, const Stmt* s) const;

  // An array-typed name whose target tessc cannot determine: it may be any array of its type.
  Value Wildcard(const ValueDecl* vd, SourceLocation loc);

  // Same for an expression (a function returning a reference, a conditional, a container
  // element, ...). Keyed by the expression, so each such expression is its own unknown array.
  Value WildcardExpr(const Expr* e);

  // `candidates`: the arrays the name may denote when tessc knows them (`c ? W : H`); null means
  // any array of its element type and rank.
  Value WildcardFor(const void* key, const std::string& name, QualType type, SourceLocation loc,
                    const std::vector<int>* candidates = nullptr);

  // Each access through a wildcard name is also an access to every array it may denote.
  void ExpandWildcards();

  // Reference parameters of the function that contains the loop are distinct arrays only if every
  // call in this translation unit passes distinct arrays; otherwise they may be one array.
  void ExpandParameterAliases();

  bool ParamsDistinct(const ParmVarDecl* a, const ParmVarDecl* b, std::string* why);

  // `any_element`: the copy's subscripts are all unknown (a view over another rank's storage).
  void Duplicate(size_t access, int array, const std::string& reason, bool any_element = false);

  // ---- the walk ------------------------------------------------------------------------------

  // If `e` denotes one array element, records it with `use` and returns true.
  bool VisitElement(const Expr* e, Use use);

  // Subscript expressions may read arrays themselves (A(idx(key[0]))).
  void VisitIndexArguments(const Expr* s);

  // The object part of W.row(i)[j]: visit the subscripts inside it, not the view itself.
  void VisitObjectChain(const Expr* obj);

  void Visit(const Stmt* st, Use use);

  void VisitVarDecl(const VarDecl* vd);

  void VisitIndexArgumentsOf(const Expr* init);

  void VisitRangeFor(const CXXForRangeStmt* fr);

  void VisitExpr(const Expr* e, Use use);

  // Something hands out a pointer to the array (or it goes where tessc cannot follow).
  void VisitEscape(const Expr* e, SourceLocation loc, const std::string& why);

  void VisitOperatorCall(const CXXOperatorCallExpr* op, Use use);

  void VisitCall(const CallExpr* call);

  void VisitArrayMethod(const CXXMemberCallExpr* mc, TypeKind kind);

  // A function tessc cannot look into: elements passed by non-const reference are updated in
  // place; arrays and views passed are read (const) or read and written (otherwise) anywhere.
  void VisitUnknownCall(const CallExpr* call, const FunctionDecl* fd, unsigned first);

  // An update of a std::atomic that commutes and whose result is unused (`n.fetch_add(1);`,
  // `++n;` as a statement): race-free, and its final value is the serial one.
  bool IsCommutingAtomicUpdate(const CallExpr* call, const FunctionDecl* fd) const;

  // Standard algorithms that only read the ranges they are given.
  static bool ReadsOnly(const FunctionDecl* fd);

  void WalkCallback(const CXXMethodDecl* op);

  // The values of a helper's parameters for the arguments `args[0..n)` (arrays, views, keys,
  // integers, lambdas, and where references and pointers lead); visits the other arguments.
  Frame BindParams(const FunctionDecl* fd, const Expr* const* args, unsigned n, const Stmt* body);

  // An object constructed in the body: arrays and accumulators are refused, library classes must
  // be on the list, a class of the program has its constructor and destructor walked.
  void VisitConstruct(const clang::CXXConstructExpr* ce);

  // Walks a helper's body with its parameters bound to the call's arguments.
  void Inline(const FunctionDecl* fd, const CallExpr* call, unsigned first);

  // ---- shared state and opaque code (body_places.cc) ------------------------------------------

  // The storage an lvalue denotes.
  Place RootOf(const Expr* e, int depth = 0);
  // The storage a pointer, iterator or view value (or an object holding references) points into.
  Place PointeeOf(const Expr* e, int depth = 0);
  // An lvalue that is written (`use` is a write): fine for iteration-local storage, an access for
  // array storage, and a reason to run serially for shared or untraceable storage.
  void CheckWrite(const Expr* e, Use use, SourceLocation loc);
  // An lvalue read through a pointer, reference or view that is not an array name.
  void CheckIndirectRead(const Expr* e);
  // True for an lvalue that reaches storage indirectly (through a pointer, iterator, reference
  // or view that is not one of the programming model's array names).
  bool IsIndirectLvalue(const Expr* e);
  // True if a use of `vd` in `s` may make the pointer (iterator, view) point elsewhere than into
  // the object it was initialized with; stepping it (++, --, +=, -=) does not.
  bool IsRepointed(const VarDecl* vd, const Stmt* s, const Stmt* parent = nullptr) const;
  // True if `vd` is stepped (++, --, +=, -=) somewhere in `s`.
  bool IsStepped(const VarDecl* vd, const Stmt* s, const Stmt* parent = nullptr) const;
  // The subscripts a Key argument denotes: the loop's key, or a braced list of components.
  std::vector<Affine> EvalKeyArg(const Expr* e);
  // A lookup of element `subs` of `array` by key (operator(), at, get, find, contains). One that
  // `may_insert` (non-const operator() or at() of a key a sparse array does not store inserts it)
  // is not safe on executor threads: allowed for the loop's own element of its space, arrays
  // tessc can prove dense, and the permuted key into a permuted pair (permuted_pair.h);
  // otherwise the site runs serially. Lookups that never insert are safe (the index is built
  // under a lock).
  void CheckSparseLookup(int array, const std::vector<Affine>& subs, SourceLocation loc,
                         const std::string& how, bool may_insert);
  // True if the array `d` names is certainly dense: a variable initialized by DistArray::dense,
  // filled or random (or a reference to one, or a parameter every call passes one to).
  bool KnownDense(const ValueDecl* d, int depth = 0) const;
  // What the body may do through `fd` is unknown: the site must run serially.
  void Opaque(SourceLocation loc, std::string text);
  // True if `vd` is storage of one iteration: a non-static local or by-value parameter of the loop
  // body or of a function the walk is inside, or a thread_local scratch variable.
  bool IsIterationLocal(const VarDecl* vd) const;
  // Reads through untraceable pointers conflict with any write to an array of their element type.
  void CheckUntracedReads();
  // The text of `e` as written, for notes.
  std::string Text(const Expr* e) const;
  // A place for the pointee of `e` when e's type says the storage is iteration-local or a
  // container tessc knows owns its storage (std::vector, ...): RootOf the container.
  static bool IsOwningContainer(clang::QualType t);

  ASTContext& ctx_;
  SourceManager& sm_;
  const CallIndex& calls_;
  CollectedSite* out_;
  SiteModel& model_;
  const FunctionDecl* enclosing_ = nullptr;
  const Stmt* lambda_body_ = nullptr;
  std::vector<Frame> frames_;
  std::vector<const Stmt*> mutation_scopes_;
  std::map<const Stmt*, std::unique_ptr<ExprMutationAnalyzer>> mutation_analyzers_;
  std::map<std::pair<const Stmt*, const VarDecl*>, bool> mutated_;
  std::set<const FunctionDecl*> inline_stack_;
  std::vector<SourceLocation> call_stack_;  // calls being walked, outermost first
  std::map<const ValueDecl*, int> array_ids_;
  std::map<int, const ValueDecl*> array_decls_;  // the declaration each array was registered for
  int space_array_ = -1;
  mutable std::map<const clang::FieldDecl*, bool> dense_fields_;  // KnownDense of data members
  mutable std::string dense_why_;  // why the last KnownDense found a dense array's name replaceable
  // Arrays given a loader field's origin, and the one field expression (`loaded->train`) that
  // may name each: another expression naming the same field may be another result's array.
  std::map<int, const Expr*> loader_fields_;
  std::vector<std::string> array_sigs_;
  std::map<const void*, int> wildcard_ids_;
  std::map<int, std::vector<int>> wildcard_candidates_;
  const ValueDecl* wildcard_name_ = nullptr;
  std::set<const ParmVarDecl*> param_arrays_;
  std::vector<const FunctionDecl*> walked_;  // the loop body's operator and every function inside
  // `this` of the methods being walked (empty: the loop body's `this`, shared by all iterations).
  std::vector<Place> this_places_;
  std::vector<std::pair<SourceLocation, std::string>> untraced_reads_;  // (where, element type)
  std::set<const Expr*> discarded_;  // expression statements (their values are unused)
  std::set<int> atomic_families_;  // kinds of commuting atomic updates seen (add, and, or, xor)
};

}  // namespace tessera::compiler

#endif  // TESSERA_COMPILER_SRC_BODY_WALKER_H_
