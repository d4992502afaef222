// lda's --vocab: the word of wordID n is line n of the file (the corpus tool's --vocab output, or
// a saved model's vocab.txt).
//
// Thread safety: reentrant.
#ifndef TESSERA_APPS_LDA_VOCABULARY_H_
#define TESSERA_APPS_LDA_VOCABULARY_H_

#include <string>
#include <vector>

#include "tessera/common/status.h"

namespace lda {

// Reads the vocabulary at `path` with the corpus tool's word-list reader (corpus::ReadWordList:
// one word per line, trailing '\r's dropped), so that lda and `corpus --vocab-in` give every line
// the same word and the vocab.txt a model writes reads back to the same words. Errors, each
// naming --vocab and the path: InvalidArgument (a directory), NotFound (cannot open), DataLoss
// (a read error).
tessera::Result<std::vector<std::string>> ReadVocabulary(const std::string& path);

}  // namespace lda

#endif  // TESSERA_APPS_LDA_VOCABULARY_H_
